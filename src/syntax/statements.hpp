// Where the statements of an examples or queries file begin (a statement: everything up
// to its '.', an example or a query line), found by lexing only, and a source that holds a
// run of them at their original lines and columns. An MPI rank parses only its share of a
// dataset this way (docs/distributed.md): the lexer finds the boundaries at a fraction of
// the parser's cost, and errors in the share still name file:line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lrnn/ast.hpp"
#include "lrnn/diagnostics.hpp"

namespace lrnn::syntax {

struct StatementIndex {
  struct Start {
    size_t offset = 0;
    uint32_t line = 1, col = 1;
    bool named = false;  // begins `name :-` (an example id, or a query line's example)
  };
  std::shared_ptr<const SourceFile> file;
  std::vector<Start> starts;  // one per statement, in file order (an unfinished last one too)
  size_t size() const { return starts.size(); }
  bool any_named() const;
};

// Lexes `file` (throws its lexical errors, file:line) and records each statement's start.
StatementIndex index_statements(std::shared_ptr<const SourceFile> file);

// A source named as `index.file` holding statements [first, last) (and the comments after
// them) at their own lines and columns: the text before them is replaced by newlines and
// spaces, so a parse error in them names the line of the whole file.
std::shared_ptr<const SourceFile> statements_source(const StatementIndex& index, size_t first, size_t last);

// The examples / query lines of a source (parser.cpp), e.g. of statements_source.
std::vector<ExampleAst> parse_examples_file(const std::shared_ptr<const SourceFile>& file);
std::vector<QueryLineAst> parse_queries_file(const std::shared_ptr<const SourceFile>& file);
// The examples of a source with each fact handed to `fact` as it is parsed (then dropped)
// and `example_end` called after each example's last fact: the examples returned hold no
// facts, so a big example is never held whole as literals (~450 bytes per edge fact).
struct ExampleFactSink {
  std::function<void(Literal&&)> fact;
  std::function<void()> example_end;
};
std::vector<ExampleAst> parse_examples_streaming(const std::shared_ptr<const SourceFile>& file,
                                                 const ExampleFactSink& sink);
// Source files (source_files.cpp). read_whole_file reads a file in one allocation, false
// if it cannot be read (or is a directory); read_source_file is that file as a source
// (throws lrnn::Error naming it when it cannot be read); make_source a string named `name`.
bool read_whole_file(const std::string& path, std::string& out);
std::shared_ptr<const SourceFile> read_source_file(const std::string& path);
std::shared_ptr<const SourceFile> make_source(std::string_view text, const std::string& name);
// A big file's text (kLetGoOfTextBytes or more), parsed whole and no longer viewed, let go:
// its spans' diagnostics read their lines back from the file (SourceFile::text_on_disk).
// Only for a file read_source_file gave. A graph's examples file is tens of MB, held
// beside its parsed facts while they are grounded.
inline constexpr size_t kLetGoOfTextBytes = size_t{1} << 20;
void let_go_of_text(const std::shared_ptr<const SourceFile>& read);

}  // namespace lrnn::syntax
