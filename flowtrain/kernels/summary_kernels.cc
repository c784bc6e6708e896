// Kernels of the summary ops: each builds a tensorflow.Summary and outputs it serialized in a
// DT_STRING scalar. Histograms use TF's default bucket limits and encoding, images are PNG
// (libpng), audio is 16-bit PCM WAV, so TensorBoard shows them exactly as TF's.
#include <png.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/framework/op_kernel.h"
#include "flowtrain/proto/summary.pb.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain {
namespace {

void OutputSummary(OpKernelContext* ctx, const tensorflow::Summary& summary) {
  Tensor* out = ctx->allocate_output(0, TensorShape({}));
  if (!summary.SerializeToString(&out->scalar<std::string>())) {
    Internal("Could not serialize the summary of ", ctx->node().name());
  }
}

// A tensor of one element counts as a scalar where TF accepts "legacy scalars".
bool IsLegacyScalar(const TensorShape& shape) {
  return shape.dims() == 0 || (shape.dims() == 1 && shape.dim_size(0) == 1);
}

// ---- ScalarSummary ----

class ScalarSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tags = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (tags.shape() != values.shape() && !(IsLegacyScalar(tags.shape()) && IsLegacyScalar(values.shape()))) {
      const std::string single_tag =
          tags.NumElements() == 1 ? StrCat(" (tag '", tags.flat<std::string>()[0], "')") : "";
      InvalidArgument("tags and values not the same shape: ", tags.shape().DebugString(),
                      " != ", values.shape().DebugString(), single_tag);
    }
    tensorflow::Summary summary;
    const auto tag_list = tags.flat<std::string>();
    DispatchNumericType(values.dtype(), "ScalarSummary", [&]<typename T>() {
      const auto v = values.flat<T>();
      for (size_t i = 0; i < tag_list.size(); ++i) {
        auto* value = summary.add_value();
        value->set_tag(tag_list[i]);
        value->set_simple_value(static_cast<float>(v[i]));
      }
    });
    OutputSummary(ctx, summary);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("ScalarSummary", ScalarSummaryOp);

// ---- HistogramSummary ----

// TF's default bucket limits: ±1e-12 * 1.1^k up to 1e20, ±DBL_MAX at the ends, 0 in the
// middle (1551 strictly increasing limits).
const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double>* limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
    positive.push_back(DBL_MAX);
    auto* all = new std::vector<double>();
    all->reserve(positive.size() * 2 + 1);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all->push_back(-*it);
    all->push_back(0.0);
    all->insert(all->end(), positive.begin(), positive.end());
    return all;
  }();
  return *limits;
}

// Bucket i counts values in [limit[i-1], limit[i]); min/max/num/sum/sum_squares as TF keeps
// them (min starts at DBL_MAX, max at -DBL_MAX).
class Histogram {
 public:
  Histogram() : limits_(DefaultBucketLimits()), counts_(limits_.size(), 0.0) {}

  void Add(double value) {
    size_t b = std::upper_bound(limits_.begin(), limits_.end(), value) - limits_.begin();
    if (b >= counts_.size()) b = counts_.size() - 1;
    counts_[b] += 1.0;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    num_ += 1.0;
    sum_ += value;
    sum_squares_ += value * value;
  }

  // TF's EncodeToProto(preserve_zero_buckets=false): non-empty buckets as (limit, count); each
  // run of empty buckets collapses into one entry at the run's last limit with count 0.
  void EncodeToProto(tensorflow::HistogramProto* proto) const {
    proto->set_min(min_);
    proto->set_max(max_);
    proto->set_num(num_);
    proto->set_sum(sum_);
    proto->set_sum_squares(sum_squares_);
    for (size_t i = 0; i < counts_.size();) {
      double limit = limits_[i];
      double count = counts_[i];
      ++i;
      if (count <= 0.0) {
        while (i < counts_.size() && counts_[i] <= 0.0) {
          limit = limits_[i];
          count = counts_[i];
          ++i;
        }
      }
      proto->add_bucket_limit(limit);
      proto->add_bucket(count);
    }
    if (proto->bucket_size() == 0) {
      proto->add_bucket_limit(DBL_MAX);
      proto->add_bucket(0.0);
    }
  }

 private:
  const std::vector<double>& limits_;
  std::vector<double> counts_;
  double min_ = DBL_MAX;
  double max_ = -DBL_MAX;
  double num_ = 0;
  double sum_ = 0;
  double sum_squares_ = 0;
};

class HistogramSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& values = ctx->input(1);
    if (!IsLegacyScalar(tag.shape())) InvalidArgument("tags must be scalar");
    Histogram histogram;
    DispatchNumericType(values.dtype(), "HistogramSummary", [&]<typename T>() {
      for (const T& element : values.flat<T>()) {
        const double v = static_cast<double>(element);
        if (std::isnan(v)) InvalidArgument("Nan in summary histogram for: ", name());
        if (std::isinf(v)) InvalidArgument("Infinity in summary histogram for: ", name());
        histogram.Add(v);
      }
    });
    tensorflow::Summary summary;
    auto* value = summary.add_value();
    value->set_tag(tag.flat<std::string>()[0]);
    histogram.EncodeToProto(value->mutable_histo());
    OutputSummary(ctx, summary);
  }
};
FT_REGISTER_KERNEL("HistogramSummary", HistogramSummaryOp);

// ---- ImageSummary ----

void AppendPngBytes(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}
void FlushPng(png_structp) {}

[[noreturn]] void PngError(png_structp png, png_const_charp message) {
  // libpng requires this handler not to return; longjmp back into EncodePng.
  *static_cast<std::string*>(png_get_error_ptr(png)) = message;
  png_longjmp(png, 1);
}
void PngWarning(png_structp, png_const_charp) {}

// 8-bit PNG of `height` rows of `width * channels` bytes, zlib's default compression level
// (what TF writes). Returns false on a libpng error (message in *error).
bool EncodePng(const uint8_t* pixels, int width, int height, int channels, std::string* out,
               std::string* error) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, error, PngError, PngWarning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  // Nothing with a destructor may live between setjmp and the longjmp that returns here.
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  const int color_type = channels == 1   ? PNG_COLOR_TYPE_GRAY
                         : channels == 2 ? PNG_COLOR_TYPE_GRAY_ALPHA
                         : channels == 3 ? PNG_COLOR_TYPE_RGB
                                         : PNG_COLOR_TYPE_RGB_ALPHA;
  png_set_write_fn(png, out, AppendPngBytes, FlushPng);
  png_set_compression_level(png, -1);  // Z_DEFAULT_COMPRESSION
  png_set_compression_mem_level(png, 9);
  png_set_IHDR(png, info, width, height, 8, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t row_bytes = static_cast<size_t>(width) * channels;
  for (int row = 0; row < height; ++row) {
    png_write_row(png, const_cast<png_bytep>(pixels + row * row_bytes));
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

class ImageSummaryOp : public OpKernel {
 public:
  explicit ImageSummaryOp(OpKernelConstruction& c)
      : OpKernel(c),
        max_images_(c.GetAttr<int64_t>("max_images")),
        bad_color_(c.GetAttr<Tensor>("bad_color")) {
    if (max_images_ >= (int64_t{1} << 31)) InvalidArgument("max_images must be < 2^31");
    if (bad_color_.dtype() != DT_UINT8) {
      InvalidArgument("bad_color must be uint8, got ", DataTypeString(bad_color_.dtype()));
    }
    if (bad_color_.dims() != 1) {
      InvalidArgument("bad_color must be a vector, got shape ", bad_color_.shape().DebugString());
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& images = ctx->input(1);
    if (!IsLegacyScalar(tag.shape())) InvalidArgument("Tags must be a scalar");
    if (images.dims() != 4 ||
        (images.dim_size(3) != 1 && images.dim_size(3) != 3 && images.dim_size(3) != 4)) {
      InvalidArgument("Tensor must be 4-D with last dim 1, 3, or 4, not ", images.shape().DebugString());
    }
    if (images.dim_size(0) >= (int64_t{1} << 31) || images.dim_size(1) >= (int64_t{1} << 31) ||
        images.dim_size(2) >= (int64_t{1} << 31) ||
        images.dim_size(1) * images.dim_size(2) >= (int64_t{1} << 29)) {
      InvalidArgument("Tensor too large for summary ", images.shape().DebugString());
    }
    const int batch = static_cast<int>(images.dim_size(0));
    const int height = static_cast<int>(images.dim_size(1));
    const int width = static_cast<int>(images.dim_size(2));
    const int depth = static_cast<int>(images.dim_size(3));
    const size_t pixels = static_cast<size_t>(height) * width;
    if (pixels == 0) {
      InvalidArgument("input tensor must have non-zero dims. Found: [", batch, ", ", height, ", ", width,
                      ", ", depth, "].");
    }
    if (images.dtype() != DT_UINT8 && bad_color_.dim_size(0) < depth) {
      InvalidArgument("expected depth <= bad_color.size, got depth = ", depth,
                      ", bad_color.size = ", bad_color_.dim_size(0));
    }
    const std::string& base_tag = tag.flat<std::string>()[0];
    const int count = static_cast<int>(std::min<int64_t>(max_images_, batch));
    const size_t image_size = pixels * depth;
    std::vector<uint8_t> scratch(images.dtype() == DT_UINT8 ? 0 : image_size);

    tensorflow::Summary summary;
    for (int i = 0; i < count; ++i) {
      const uint8_t* image;
      if (images.dtype() == DT_UINT8) {
        image = images.data<uint8_t>() + i * image_size;
      } else {
        DispatchNumericType(images.dtype(), "ImageSummary", [&]<typename T>() {
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, half>) {
            NormalizeImage<T>(images.data<T>() + i * image_size, pixels, depth, scratch.data());
          } else {
            InvalidArgument("ImageSummary does not support ", DataTypeString(images.dtype()));
          }
        });
        image = scratch.data();
      }
      auto* value = summary.add_value();
      // The tag depends on how many images were asked for, not how many there are.
      value->set_tag(max_images_ > 1 ? StrCat(base_tag, "/image/", i) : StrCat(base_tag, "/image"));
      auto* encoded = value->mutable_image();
      encoded->set_height(height);
      encoded->set_width(width);
      encoded->set_colorspace(depth);
      std::string png_error;
      if (!EncodePng(image, width, height, depth, encoded->mutable_encoded_image_string(), &png_error)) {
        Internal("PNG encoding failed", png_error.empty() ? "" : ": ", png_error);
      }
    }
    OutputSummary(ctx, summary);
  }

 private:
  // TF's rescaling into uint8, per image and ignoring pixels with a non-finite channel: with
  // no negative values, scale so the largest is 255; otherwise scale by the largest magnitude
  // to ±127 around 128. Pixels with a non-finite channel get bad_color. (Truncating casts, as
  // TF's.)
  template <typename T>
  void NormalizeImage(const T* values, size_t pixels, int depth, uint8_t* out) const {
    auto finite_pixel = [&](size_t p) {
      for (int c = 0; c < depth; ++c) {
        if (!std::isfinite(static_cast<double>(values[p * depth + c]))) return false;
      }
      return true;
    };
    float image_min = std::numeric_limits<float>::infinity();
    float image_max = -image_min;
    for (size_t p = 0; p < pixels; ++p) {
      if (!finite_pixel(p)) continue;
      for (int c = 0; c < depth; ++c) {
        const float v = static_cast<float>(values[p * depth + c]);
        image_min = std::min(image_min, v);
        image_max = std::max(image_max, v);
      }
    }
    constexpr float kZeroThreshold = 1e-6f;
    T scale, offset;
    if (image_min < 0) {
      const float max_val = std::max(std::abs(image_min), std::abs(image_max));
      scale = T(max_val < kZeroThreshold ? 0.0f : 127.0f / max_val);
      offset = T(128.0f);
    } else {
      scale = T(image_max < kZeroThreshold ? 0.0f : 255.0f / image_max);
      offset = T(0.0f);
    }
    const uint8_t* bad = bad_color_.data<uint8_t>();
    for (size_t p = 0; p < pixels; ++p) {
      const bool finite = finite_pixel(p);
      for (int c = 0; c < depth; ++c) {
        out[p * depth + c] =
            finite ? static_cast<uint8_t>(static_cast<float>(values[p * depth + c] * scale + offset))
                   : bad[c];
      }
    }
  }

  int64_t max_images_;
  Tensor bad_color_;
};
FT_REGISTER_KERNEL("ImageSummary", ImageSummaryOp);

// ---- AudioSummaryV2 ----

void PutLE(std::string& out, size_t offset, uint32_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[offset + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// A 44-byte RIFF/WAVE header (PCM, 16 bits) followed by the interleaved samples, each
// round(x * 32768) clamped to int16 (TF's EncodeAudioAsS16LEWav).
std::string EncodeWav(const float* samples, uint32_t sample_rate, uint32_t channels, uint64_t frames) {
  constexpr size_t kHeaderSize = 44;
  const uint64_t data_size = frames * channels * 2;
  if (kHeaderSize + data_size > std::numeric_limits<uint32_t>::max()) {
    InvalidArgument("Provided channels and frames cannot be encoded as a WAV.");
  }
  std::string wav(kHeaderSize + data_size, '\0');
  std::memcpy(&wav[0], "RIFF", 4);
  PutLE(wav, 4, static_cast<uint32_t>(wav.size() - 8), 4);
  std::memcpy(&wav[8], "WAVE", 4);
  std::memcpy(&wav[12], "fmt ", 4);
  PutLE(wav, 16, 16, 4);  // format chunk size
  PutLE(wav, 20, 1, 2);   // PCM
  PutLE(wav, 22, channels, 2);
  PutLE(wav, 24, sample_rate, 4);
  PutLE(wav, 28, sample_rate * channels * 2, 4);  // bytes per second
  PutLE(wav, 32, channels * 2, 2);                // bytes per frame
  PutLE(wav, 34, 16, 2);                          // bits per sample
  std::memcpy(&wav[36], "data", 4);
  PutLE(wav, 40, static_cast<uint32_t>(data_size), 4);
  for (uint64_t i = 0; i < frames * channels; ++i) {
    const float scaled = std::round(samples[i] * 32768.0f);
    const auto sample = static_cast<int16_t>(std::clamp(scaled, -32768.0f, 32767.0f));
    PutLE(wav, kHeaderSize + 2 * i, static_cast<uint16_t>(sample), 2);
  }
  return wav;
}

class AudioSummaryOp : public OpKernel {
 public:
  explicit AudioSummaryOp(OpKernelConstruction& c)
      : OpKernel(c), max_outputs_(c.GetAttr<int64_t>("max_outputs")) {
    if (max_outputs_ <= 0) InvalidArgument("max_outputs must be > 0");
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& audio = ctx->input(1);
    const Tensor& rate = ctx->input(2);
    if (!IsLegacyScalar(tag.shape())) InvalidArgument("Tag must be a scalar");
    if (audio.dims() < 2 || audio.dims() > 3) {
      InvalidArgument("Tensor must be 3-D or 2-D, got: ", audio.shape().DebugString());
    }
    if (rate.NumElements() != 1) {
      InvalidArgument("sample_rate must be a scalar, got shape ", rate.shape().DebugString());
    }
    const float sample_rate = rate.flat<float>()[0];
    if (!(sample_rate > 0.0f)) InvalidArgument("sample_rate must be > 0");
    const int64_t batch = audio.dim_size(0);
    const int64_t frames = audio.dim_size(1);
    const int64_t channels = audio.dims() == 2 ? 1 : audio.dim_size(2);
    if (frames == 0) InvalidArgument("num_frames must be positive.");
    if (channels == 0 || channels > 0xffff) {
      InvalidArgument("num_channels must be in (0, 2^16), got: ", channels);
    }
    // The WAV header holds an integral rate (TF rounds, and never writes 0).
    const long rounded_rate = std::lrint(sample_rate);
    if (rounded_rate > static_cast<long>(std::numeric_limits<uint32_t>::max())) {
      InvalidArgument("sample_rate must be in (0, 2^32), got: ", sample_rate);
    }
    const uint32_t wav_rate = rounded_rate == 0 ? 1 : static_cast<uint32_t>(rounded_rate);
    const std::string& base_tag = tag.flat<std::string>()[0];

    tensorflow::Summary summary;
    const int64_t count = std::min(max_outputs_, batch);
    for (int64_t i = 0; i < count; ++i) {
      auto* value = summary.add_value();
      value->set_tag(max_outputs_ > 1 ? StrCat(base_tag, "/audio/", i) : StrCat(base_tag, "/audio"));
      auto* clip = value->mutable_audio();
      clip->set_sample_rate(sample_rate);
      clip->set_num_channels(channels);
      clip->set_length_frames(frames);
      clip->set_content_type("audio/wav");
      clip->set_encoded_audio_string(EncodeWav(audio.data<float>() + i * frames * channels, wav_rate,
                                               static_cast<uint32_t>(channels),
                                               static_cast<uint64_t>(frames)));
    }
    OutputSummary(ctx, summary);
  }

 private:
  int64_t max_outputs_;
};
FT_REGISTER_KERNEL("AudioSummaryV2", AudioSummaryOp);

// ---- TensorSummaryV2 ----

class TensorSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    const Tensor& tag = ctx->input(0);
    const Tensor& tensor = ctx->input(1);
    const Tensor& metadata = ctx->input(2);
    if (tag.dims() != 0) InvalidArgument("tag must be scalar");
    if (metadata.dims() != 0) InvalidArgument("serialized_summary_metadata must be scalar");
    tensorflow::Summary summary;
    auto* value = summary.add_value();
    value->set_tag(tag.scalar<std::string>());
    // Strings go in string_val (TensorBoard cannot read them from tensor_content); numbers
    // in tensor_content, as TF writes them.
    *value->mutable_tensor() = TensorToProto(tensor);
    if (!value->mutable_metadata()->ParseFromString(metadata.scalar<std::string>())) {
      InvalidArgument("Could not parse the serialized_summary_metadata of ", name());
    }
    OutputSummary(ctx, summary);
  }
  KernelCost cost() const override { return KernelCost::kCheap; }
};
FT_REGISTER_KERNEL("TensorSummaryV2", TensorSummaryOp);

// ---- MergeSummary ----

class MergeSummaryOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(OpKernelContext* ctx) override {
    tensorflow::Summary merged;
    std::unordered_set<std::string> tags;
    tensorflow::Summary input;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      for (const std::string& serialized : ctx->input(i).flat<std::string>()) {
        if (!input.ParseFromString(serialized)) {
          InvalidArgument("Could not parse one of the summary inputs");
        }
        for (auto& value : *input.mutable_value()) {
          // Values without a tag (old TensorSummary) cannot collide.
          if (!value.tag().empty() && !tags.insert(value.tag()).second) {
            InvalidArgument("Duplicate tag ", value.tag(), " found in summary inputs");
          }
          *merged.add_value() = std::move(value);
        }
      }
    }
    OutputSummary(ctx, merged);
  }
};
FT_REGISTER_KERNEL("MergeSummary", MergeSummaryOp);

}  // namespace
}  // namespace flowtrain
