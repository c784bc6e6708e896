// Optimizers given sparse gradients (a table read by a gather): every optimizer, on reference
// and on resource variables, updates only the rows named, leaving the others (and their slots)
// bitwise as they were; repeated indices are summed first where TF sums them (all but
// GradientDescent); Adam is TF1's non-lazy Adam (a row read once keeps moving); an index out of
// the table fails the step and changes nothing.
#include <cstring>
#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "flowtrain/core/error.h"
#include "flowtrain/ops/array_ops.h"
#include "flowtrain/ops/io_ops.h"
#include "flowtrain/ops/math_ops.h"
#include "flowtrain/ops/training_util.h"
#include "flowtrain/ops/variables.h"
#include "flowtrain/runtime/session.h"
#include "flowtrain/train/adadelta.h"
#include "flowtrain/train/adagrad.h"
#include "flowtrain/train/adagrad_da.h"
#include "flowtrain/train/adam.h"
#include "flowtrain/train/ftrl.h"
#include "flowtrain/train/gradient_descent.h"
#include "flowtrain/train/momentum.h"
#include "flowtrain/train/proximal_adagrad.h"
#include "flowtrain/train/proximal_gradient_descent.h"
#include "flowtrain/train/rmsprop.h"
#include "tests/test_util.h"

namespace flowtrain::train {
namespace {

using testing::ExpectInvalidArgument;
using testing::Values;

constexpr int64_t kRows = 8, kCols = 3;

Tensor InitialTable() {
  Tensor t(DT_FLOAT, TensorShape({kRows, kCols}));
  for (int64_t i = 0; i < t.NumElements(); ++i) t.flat<float>()[i] = 0.25f * static_cast<float>(i % 7) - 0.6f;
  return t;
}

bool RowEquals(const Tensor& a, const Tensor& b, int64_t row) {
  return std::memcmp(a.data<float>() + row * kCols, b.data<float>() + row * kCols, kCols * sizeof(float)) ==
         0;
}

// A table, a loss reading the rows `ids` (a placeholder) of it, and `make`'s update.
struct Model {
  Graph g;
  Variable table;
  Output ids;
  Operation train_op;
  std::unique_ptr<Optimizer> optimizer;
};

void Build(Model& m, bool use_resource, const std::function<std::unique_ptr<Optimizer>(Variable)>& make) {
  auto as_default = m.g.AsDefault();
  Variable step = GetOrCreateGlobalStep();
  m.table = Variable(InitialTable(), {.name = "table", .use_resource = use_resource});
  m.ids = ops::Placeholder(DT_INT32, PartialTensorShape({-1}), "ids");
  Output weights = ops::Const<float>({1.0f, -2.0f, 0.5f});
  Output loss = ops::ReduceSum(ops::Square(ops::Gather(m.table, m.ids) * weights + ops::Const(0.3f)));
  m.optimizer = make(step);
  std::vector<GradAndVar> grads = m.optimizer->ComputeGradients(loss, {m.table});
  EXPECT_TRUE(grads[0].first.is_sparse());
  m.train_op = m.optimizer->ApplyGradients(grads, step);
}

const std::vector<std::pair<std::string, std::function<std::unique_ptr<Optimizer>(Variable)>>>& Optimizers() {
  static const auto* all =
      new std::vector<std::pair<std::string, std::function<std::unique_ptr<Optimizer>(Variable)>>>{
          {"sgd", [](Variable) { return std::make_unique<GradientDescentOptimizer>(0.1); }},
          {"momentum", [](Variable) { return std::make_unique<MomentumOptimizer>(0.1, 0.9); }},
          {"nesterov",
           [](Variable) {
             return std::make_unique<MomentumOptimizer>(0.1, 0.9, MomentumOptions{.use_nesterov = true});
           }},
          {"adagrad", [](Variable) { return std::make_unique<AdagradOptimizer>(0.1); }},
          {"adam", [](Variable) { return std::make_unique<AdamOptimizer>(0.1); }},
          {"rmsprop", [](Variable) { return std::make_unique<RMSPropOptimizer>(0.1); }},
          {"centered_rmsprop",
           [](Variable) {
             return std::make_unique<RMSPropOptimizer>(0.1,
                                                       RMSPropOptions{.momentum = 0.5, .centered = true});
           }},
          {"ftrl",
           [](Variable) {
             return std::make_unique<FtrlOptimizer>(0.1, FtrlOptions{.l1_regularization_strength = 0.01});
           }},
          {"ftrl_v2",
           [](Variable) {
             return std::make_unique<FtrlOptimizer>(0.1,
                                                    FtrlOptions{.l2_shrinkage_regularization_strength = 0.1});
           }},
          {"adadelta", [](Variable) { return std::make_unique<AdadeltaOptimizer>(1.0); }},
          {"proximal_adagrad",
           [](Variable) {
             return std::make_unique<ProximalAdagradOptimizer>(
                 0.1, ProximalAdagradOptions{.l1_regularization_strength = 0.01});
           }},
          {"proximal_gd", [](Variable) { return std::make_unique<ProximalGradientDescentOptimizer>(0.1); }},
          {"adagrad_da", [](Variable step) { return std::make_unique<AdagradDAOptimizer>(0.1, step); }},
      };
  return *all;
}

TEST(SparseApplyTest, RowsNotNamedStayBitwiseUntouched) {
  for (const auto& [name, make] : Optimizers()) {
    for (const bool use_resource : {false, true}) {
      SCOPED_TRACE(name + (use_resource ? " (resource)" : ""));
      Model m;
      Build(m, use_resource, make);
      Session sess(m.g);
      sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.g)});
      const Tensor before = m.table.value().Eval(sess);
      std::vector<Tensor> slots_before;
      for (const Variable& v : m.optimizer->variables()) {
        if (v.shape().dims() == 2) slots_before.push_back(v.value().Eval(sess));
      }
      // Rows 5 and 1 (5 twice) in every step.
      for (int step = 0; step < 3; ++step) {
        sess.Run({{m.ids, Tensor::FromVector<int32_t>({5, 1, 5})}}, {}, {m.train_op});
      }
      const Tensor after = m.table.value().Eval(sess);
      for (int64_t row = 0; row < kRows; ++row) {
        if (row == 1 || row == 5) {
          EXPECT_FALSE(RowEquals(before, after, row)) << "row " << row << " did not move";
        } else {
          EXPECT_TRUE(RowEquals(before, after, row)) << "row " << row << " changed";
        }
      }
      size_t k = 0;
      for (const Variable& v : m.optimizer->variables()) {
        if (v.shape().dims() != 2) continue;
        const Tensor slot = v.value().Eval(sess);
        for (int64_t row = 0; row < kRows; ++row) {
          if (row != 1 && row != 5) {
            EXPECT_TRUE(RowEquals(slots_before[k], slot, row)) << v.name() << " row " << row;
          }
        }
        ++k;
      }
      if (name != "sgd" && name != "proximal_gd") {
        EXPECT_GT(k, 0u) << "no slot checked";
      }
      // An index outside the table fails the step and writes nothing.
      ExpectInvalidArgument(
          [&] {
            sess.Run({{m.ids, Tensor::FromVector<int32_t>({2, kRows})}}, {}, {m.train_op});
          },
          "is not in [0, 8)");
      const Tensor unchanged = m.table.value().Eval(sess);
      for (int64_t row = 0; row < kRows; ++row)
        EXPECT_TRUE(RowEquals(after, unchanged, row)) << "row " << row;
    }
  }
}

// Adagrad sums a repeated row's gradients before its update (TF's _deduplicate_indexed_slices):
// one update with g = 2 * g1, not two in a row.
TEST(SparseApplyTest, AdagradSumsRepeatedRowsFirst) {
  Graph g;
  auto as_default = g.AsDefault();
  Variable table(Tensor::FromVector<float>({1.0f, 1.0f}), {.name = "t"});
  Output ids = ops::Const<int32_t>({1, 1});
  Output loss = ops::ReduceSum(ops::Gather(table, ids));  // each occurrence gives 1
  AdagradOptimizer adagrad(0.1);
  Operation train_op = adagrad.Minimize(loss);
  Session sess(g);
  sess.Run({}, {}, {ops::GlobalVariablesInitializer()});
  sess.Run({}, {}, {train_op});
  const std::vector<float> got = Values<float>(table.value().Eval(sess));
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_FLOAT_EQ(got[1], 1.0f - 0.1f * 2.0f / std::sqrt(0.1f + 4.0f));
  EXPECT_FLOAT_EQ(Values<float>(adagrad.GetSlot(table, "accumulator")->value().Eval(sess))[1], 4.1f);
}

// TF1's Adam is not lazy: a row read once keeps moving in later steps (m and v decay
// everywhere), while Adagrad leaves it alone once it is no longer read.
TEST(SparseApplyTest, AdamKeepsMovingRowsReadBefore) {
  for (const bool lazy_free : {true, false}) {
    Model m;
    Build(m, false, [&](Variable) -> std::unique_ptr<Optimizer> {
      if (lazy_free) return std::make_unique<AdamOptimizer>(0.1);
      return std::make_unique<AdagradOptimizer>(0.1);
    });
    Session sess(m.g);
    sess.Run({}, {}, {ops::GlobalVariablesInitializer(&m.g)});
    sess.Run({{m.ids, Tensor::FromVector<int32_t>({1})}}, {}, {m.train_op});
    const Tensor after_first = m.table.value().Eval(sess);
    sess.Run({{m.ids, Tensor::FromVector<int32_t>({2})}}, {}, {m.train_op});
    const Tensor after_second = m.table.value().Eval(sess);
    EXPECT_EQ(RowEquals(after_first, after_second, 1), !lazy_free);
    EXPECT_TRUE(RowEquals(after_first, after_second, 3));  // never read: untouched by both
  }
}

}  // namespace
}  // namespace flowtrain::train
