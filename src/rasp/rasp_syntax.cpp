// The `.rasp` text syntax: the original RASP language (Weiss et al. 2021 and its
// interpreter) read into the same program DAG the C++/Python combinators build. The steps
// live in text_lexer.cpp, text_parser.cpp and text_evaluator.cpp (text_syntax.hpp); this file
// runs them on a stack of known size.
#include <pthread.h>

#include <exception>

#include "lrnn/rasp.hpp"
#include "text_syntax.hpp"

namespace lrnn::rasp {

// The parser and evaluator of `.rasp` text recurse (bounded by kMaxEvalDepth and the
// parser's nesting limits). Those bounds are safe only for a known stack, and the caller's
// may be small (a Python thread has 1 MB; sanitizers make frames larger), so the work runs
// on a thread of its own with a stack sized for the bounds; exceptions are carried back.
template <class F>
Program on_rasp_stack(F&& work) {
  constexpr size_t kStackBytes = size_t(256) << 20;  // reserved address space, not memory
  struct Job {
    F* work;
    Program result;
    std::exception_ptr error;
  } job{&work, {}, nullptr};
  auto body = [](void* arg) -> void* {
    Job& j = *static_cast<Job*>(arg);
    try {
      j.result = (*j.work)();
    } catch (...) {
      j.error = std::current_exception();
    }
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kStackBytes);
  pthread_t thread;
  const int rc = pthread_create(&thread, &attr, body, &job);
  pthread_attr_destroy(&attr);
  if (rc != 0) return work();  // no thread to be had: run here, within the same bounds
  pthread_join(thread, nullptr);
  if (job.error) std::rethrow_exception(job.error);
  return std::move(job.result);
}

Program load_rasp_file(const std::string& path) {
  return on_rasp_stack([&] { return text::evaluate_file(path); });
}

Program parse_rasp(const std::string& text, const std::string& name) {
  return on_rasp_stack([&] { return text::evaluate_text(text, name); });
}

}  // namespace lrnn::rasp
