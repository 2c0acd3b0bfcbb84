// Tests that read the shared datasets (../shared/datasets, LRNN_DATASETS_DIR). CI has them;
// a checkout without them skips these tests with a message instead of failing on a missing
// file, and every other test still runs.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>

namespace lrnn::test {

inline bool shared_datasets_present() { return std::filesystem::is_directory(LRNN_DATASETS_DIR); }

// The skip for one test body (files whose tests only partly read the datasets).
#define LRNN_SKIP_WITHOUT_SHARED_DATASETS()                                                  \
  if (!::lrnn::test::shared_datasets_present())                                              \
  GTEST_SKIP() << LRNN_DATASETS_DIR << " is absent: this test reads the shared datasets"

// The fixture of a suite whose every test reads the datasets: `class S : public
// SharedDatasetsTest {};` and TEST_F(S, ...), so no test of the suite can forget the skip.
class SharedDatasetsTest : public ::testing::Test {
 protected:
  void SetUp() override { LRNN_SKIP_WITHOUT_SHARED_DATASETS(); }
};

}  // namespace lrnn::test
