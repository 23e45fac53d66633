// Status, StatusOr and the RETURN_IF_ERROR / ASSIGN_OR_RETURN macros.
#include "base/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace forge {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  RETURN_IF_ERROR(Half(x));
  return Status::Ok();
}

TEST(StatusTest, CodesAndMessages) {
  Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.ToString(), "OK");
  Status e = DataLossError("bad block");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.code(), StatusCode::kDataLoss);
  EXPECT_EQ(e.ToString(), "DATA_LOSS: bad block");
  EXPECT_EQ(e.WithContext("model.gguf").message(), "model.gguf: bad block");
  EXPECT_TRUE(ok.WithContext("x").ok());
}

TEST(StatusTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> bad = Quarter(6);  // 6 -> 3 -> odd
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

TEST(StatusTest, MoveOnlyValues) {
  StatusOr<std::unique_ptr<int>> p = std::make_unique<int>(7);
  ASSERT_TRUE(p.ok());
  std::unique_ptr<int> v = std::move(p).value();
  EXPECT_EQ(*v, 7);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = NotFoundError("nope");
  EXPECT_DEATH((void)bad.value(), "NOT_FOUND: nope");
}

TEST(CheckDeathTest, CheckPrintsCondition) {
  int x = 3;
  EXPECT_DEATH(CHECK_EQ(x, 4) << "context", "CHECK failed: .*3 vs 4.*context");
}

}  // namespace
}  // namespace forge
