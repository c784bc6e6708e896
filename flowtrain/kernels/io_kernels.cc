// Kernels of the checkpoint ops (ops/io_ops.h): SaveV2 and RestoreV2 on V2 tensor bundles,
// MergeV2Checkpoints, and the string ops that build a sharded save's file names.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <re2/re2.h>

#include "flowtrain/core/allocator.h"
#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/io/tensor_bundle_reader.h"
#include "flowtrain/io/tensor_slice.h"
#include "flowtrain/io/tensor_bundle_writer.h"
#include "flowtrain/framework/op_kernel.h"

namespace flowtrain {
namespace {

// Checks prefix/tensor_names/shape_and_slices as TF's save/restore kernels do and returns the
// number of tensors named.
int64_t CheckNamesAndSlices(OpKernelContext* ctx, std::string_view op) {
  const Tensor& prefix = ctx->input(0);
  const Tensor& names = ctx->input(1);
  const Tensor& slices = ctx->input(2);
  if (prefix.NumElements() != 1) {
    InvalidArgument(op, ": Input prefix should have a single element, got ", prefix.shape().DebugString());
  }
  if (names.dims() != 1 || slices.dims() != 1 || names.NumElements() != slices.NumElements()) {
    InvalidArgument(op, ": tensor_names and shape_and_slices must be vectors of one length, got ",
                    names.shape().DebugString(), " and ", slices.shape().DebugString());
  }
  return names.NumElements();
}

// The parsed shape_and_slices[i], or nullopt for "" (the whole tensor). InvalidArgument naming
// the tensor when the spec is malformed.
std::optional<io::ShapeAndSlice> SliceSpec(OpKernelContext* ctx, std::string_view op, int64_t i) {
  const std::string& spec = ctx->input(2).flat<std::string>()[i];
  if (spec.empty()) return std::nullopt;
  try {
    return io::ParseShapeAndSlice(spec);
  } catch (const InvalidArgumentError& e) {
    InvalidArgument(op, ": tensor '", ctx->input(1).flat<std::string>()[i], "': ", e.what());
  }
}

class SaveV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = CheckNamesAndSlices(ctx, "SaveV2");
    if (ctx->num_inputs() - 3 != n) {
      InvalidArgument("SaveV2: got ", n, " tensor names but ", ctx->num_inputs() - 3, " tensors");
    }
    const std::string& prefix = ctx->input(0).flat<std::string>()[0];
    const auto names = ctx->input(1).flat<std::string>();
    // The inputs share the variables' buffers: each is streamed to the data file from there.
    io::BundleWriter writer(prefix);
    for (int64_t i = 0; i < n; ++i) {
      if (ctx->cancellation_manager() != nullptr && ctx->cancellation_manager()->IsCancelled()) {
        Cancelled("SaveV2 of '", prefix, "' was cancelled");
      }
      const Tensor& tensor = ctx->input(static_cast<int>(3 + i));
      if (const std::optional<io::ShapeAndSlice> spec = SliceSpec(ctx, "SaveV2", i)) {
        // A part of a partitioned variable, saved as TF saves it: a slice of the full key.
        writer.AddSlice(names[i], spec->full_shape, spec->slice, tensor);
      } else {
        writer.Add(names[i], tensor);
      }
    }
    writer.Finish();
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }
};
FT_REGISTER_KERNEL("SaveV2", SaveV2Op);

// Maps the pages of tensors about to be filled, on a thread of its own running ahead of the
// reads. A restore at a process's start reads into fresh memory, and a reader taking a page
// fault per page in its read(2) calls falls behind the disk: a 400 MB restore into fresh memory
// ran at ~60% of one into mapped memory here, while the disk left the second core idle.
// Stopped and joined when destroyed, so it never outlives the tensors.
class PrefaultAhead {
 public:
  explicit PrefaultAhead(const std::vector<Tensor*>& tensors) {
    size_t total = 0;
    for (const Tensor* t : tensors) {
      if (t->dtype() != DT_STRING) total += t->TotalBytes();
    }
    if (total < kMinBytes) return;  // a thread costs more than a few faults
    thread_ = std::jthread([tensors](std::stop_token stop) {
      for (Tensor* t : tensors) {
        if (t->dtype() == DT_STRING) continue;
        char* data = static_cast<char*>(t->raw_data());
        for (size_t done = 0; done < t->TotalBytes(); done += kPieceBytes) {
          if (stop.stop_requested()) return;
          PrefaultForWrite(data + done, std::min(kPieceBytes, t->TotalBytes() - done));
        }
      }
    });
  }

 private:
  static constexpr size_t kMinBytes = size_t{8} << 20;
  static constexpr size_t kPieceBytes = size_t{2} << 20;
  std::jthread thread_;
};

class RestoreV2Op : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const int64_t n = CheckNamesAndSlices(ctx, "RestoreV2");
    if (ctx->num_outputs() != n) {
      InvalidArgument("RestoreV2: got ", n, " tensor names but ", ctx->num_outputs(), " dtypes");
    }
    const std::string& prefix = ctx->input(0).flat<std::string>()[0];
    const auto names = ctx->input(1).flat<std::string>();
    io::BundleReader reader(prefix);
    // Every name and dtype is checked before any data is read.
    std::vector<Tensor*> outputs(static_cast<size_t>(n));
    std::vector<std::optional<io::ShapeAndSlice>> specs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const std::string& name = names[i];
      if (!reader.Contains(name)) {
        NotFound("Key ", name, " not found in checkpoint '", prefix, "'");
      }
      const io::BundleReader::DtypeAndShape stored = reader.LookupDtypeAndShape(name);
      const DataType expected = ctx->output_type(static_cast<int>(i));
      if (stored.dtype != expected) {
        InvalidArgument("tensor_name = ", name, "; expected dtype ", DataTypeString(expected),
                        " does not equal original dtype ", DataTypeString(stored.dtype), " (checkpoint '",
                        prefix, "')");
      }
      specs[i] = SliceSpec(ctx, "RestoreV2", i);
      if (specs[i] && specs[i]->full_shape != stored.shape) {
        InvalidArgument("tensor_name = ", name, "; shape in shape_and_slice spec ",
                        specs[i]->full_shape.DebugString(),
                        " does not match the shape stored in checkpoint: ", stored.shape.DebugString(),
                        " (checkpoint '", prefix, "')");
      }
      if (!specs[i]) outputs[i] = ctx->allocate_output(static_cast<int>(i), stored.shape);
    }
    std::vector<Tensor*> whole = outputs;
    std::erase(whole, nullptr);
    PrefaultAhead prefault(whole);
    for (int64_t i = 0; i < n; ++i) {
      if (specs[i]) {
        // A part of a partitioned variable: the checkpoint's slices (of any partitioning, or
        // the whole tensor) are cut to it.
        ctx->set_output(static_cast<int>(i), reader.LookupSlice(names[i], specs[i]->slice));
      } else {
        reader.LookupInto(names[i], outputs[i]);
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }
};
FT_REGISTER_KERNEL("RestoreV2", RestoreV2Op);

class MergeV2CheckpointsOp : public OpKernel {
 public:
  explicit MergeV2CheckpointsOp(OpKernelConstruction& c)
      : OpKernel(c), delete_old_dirs_(c.GetAttr<bool>("delete_old_dirs")) {
    if (c.GetAttr<bool>("allow_missing_files")) {
      Unimplemented("MergeV2Checkpoints '", name(), "': allow_missing_files=true is not supported");
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& prefixes = ctx->input(0);
    const Tensor& destination = ctx->input(1);
    if (prefixes.dims() != 1) {
      InvalidArgument("MergeV2Checkpoints: checkpoint_prefixes must be a vector, got ",
                      prefixes.shape().DebugString());
    }
    if (destination.NumElements() != 1) {
      InvalidArgument("MergeV2Checkpoints: destination_prefix must be a scalar, got ",
                      destination.shape().DebugString());
    }
    const auto flat = prefixes.flat<std::string>();
    io::MergeBundles(std::vector<std::string>(flat.begin(), flat.end()), destination.flat<std::string>()[0],
                     {.delete_old_dirs = delete_old_dirs_});
  }
  KernelCost cost() const override { return KernelCost::kExpensive; }

 private:
  bool delete_old_dirs_;
};
FT_REGISTER_KERNEL("MergeV2Checkpoints", MergeV2CheckpointsOp);

std::string ShardSuffix(int32_t shard, int32_t num_shards) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d", shard, num_shards);
  return buf;
}

class ShardedFilenameOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const std::string& basename = ctx->input(0).scalar<std::string>();
    const int32_t shard = ctx->input(1).scalar<int32_t>();
    const int32_t num_shards = ctx->input(2).scalar<int32_t>();
    if (shard < 0 || shard >= num_shards) {
      InvalidArgument("ShardedFilename: shard ", shard, " is not in [0, ", num_shards, ")");
    }
    ctx->set_output(0, Tensor::Scalar<std::string>(basename + ShardSuffix(shard, num_shards)));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ShardedFilename", ShardedFilenameOp);

class ShardedFilespecOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const std::string& basename = ctx->input(0).scalar<std::string>();
    const int32_t num_shards = ctx->input(1).scalar<int32_t>();
    char buf[32];
    std::snprintf(buf, sizeof(buf), "-\?\?\?\?\?-of-%05d", num_shards);
    ctx->set_output(0, Tensor::Scalar<std::string>(basename + buf));
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ShardedFilespec", ShardedFilespecOp);

class StringJoinOp : public OpKernel {
 public:
  explicit StringJoinOp(OpKernelConstruction& c)
      : OpKernel(c), separator_(c.GetAttr<std::string>("separator")) {}
  void Compute(OpKernelContext* ctx) override {
    // Scalars broadcast; every non-scalar input must have the same shape.
    TensorShape shape;
    bool have_shape = false;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      if (in.dims() == 0) continue;
      if (have_shape && in.shape() != shape) {
        InvalidArgument("StringJoin: input shapes do not match: ", shape.DebugString(), " vs. ",
                        in.shape().DebugString());
      }
      shape = in.shape();
      have_shape = true;
    }
    Tensor* out = ctx->allocate_output(0, shape);
    auto result = out->flat<std::string>();
    for (int64_t j = 0; j < out->NumElements(); ++j) {
      std::string& s = result[j];
      s.clear();
      for (int i = 0; i < ctx->num_inputs(); ++i) {
        const Tensor& in = ctx->input(i);
        if (i > 0) s += separator_;
        s += in.flat<std::string>()[in.dims() == 0 ? 0 : j];
      }
    }
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::string separator_;
};
FT_REGISTER_KERNEL("StringJoin", StringJoinOp);

// RE2, as TF: linear in the input's length, whatever the pattern (a backtracking matcher can
// take exponential time, or overflow its stack on a long string, fed a hostile pattern).
class StaticRegexFullMatchOp : public OpKernel {
 public:
  explicit StaticRegexFullMatchOp(OpKernelConstruction& c) : OpKernel(c) {
    const std::string pattern = c.GetAttr<std::string>("pattern");
    RE2::Options options;
    options.set_log_errors(false);
    regex_ = std::make_unique<RE2>(pattern, options);
    if (!regex_->ok()) {
      InvalidArgument("StaticRegexFullMatch '", name(), "': invalid pattern '", pattern,
                      "': ", regex_->error());
    }
  }
  void Compute(OpKernelContext* ctx) override {
    const Tensor& input = ctx->input(0);
    Tensor* out = ctx->allocate_output(0, input.shape());
    auto in = input.flat<std::string>();
    auto o = out->flat<bool>();
    for (int64_t i = 0; i < input.NumElements(); ++i) o[i] = RE2::FullMatch(in[i], *regex_);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }

 private:
  std::unique_ptr<const RE2> regex_;
};
FT_REGISTER_KERNEL("StaticRegexFullMatch", StaticRegexFullMatchOp);

}  // namespace
}  // namespace flowtrain
