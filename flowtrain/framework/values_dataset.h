// ValuesDataset: a dataset of elements held in memory, in order. WindowDataset's windows are
// ValuesDatasets (one per component). Unlike other datasets, a DT_VARIANT tensor holding one can
// be written into an IteratorState and read back (IteratorState::WriteTensor/ReadTensor keep
// its elements), so that an iterator whose input elements are windows — a flat_map over
// Dataset.window, which saves the element its current inner dataset came from — saves and
// restores its position.
//
//   Tensor window = DatasetToTensor(std::make_shared<ValuesDataset>(std::vector<Element>{{a}, {b}}));
//   state.WriteTensor("w", window);   // the two elements, as a TensorProto of DT_VARIANT
//
// Thread safety: immutable once made; its iterators are not thread-safe (as every iterator).
#ifndef FLOWTRAIN_FRAMEWORK_VALUES_DATASET_H_
#define FLOWTRAIN_FRAMEWORK_VALUES_DATASET_H_

#include <memory>
#include <string>
#include <vector>

#include "flowtrain/framework/dataset.h"
#include "flowtrain/proto/tensor.pb.h"

namespace flowtrain::data {

class ValuesDataset : public DatasetBase {
 public:
  explicit ValuesDataset(std::vector<std::vector<Tensor>> elements) : elements_(std::move(elements)) {}
  const std::vector<std::vector<Tensor>>& elements() const { return elements_; }
  std::unique_ptr<IteratorBase> MakeIterator(const std::string& prefix) const override;
  std::string DebugString() const override { return "ValuesDataset"; }

 private:
  std::vector<std::vector<Tensor>> elements_;
};

// The VariantTensorDataProto type_name under which a ValuesDataset is saved.
inline constexpr char kValuesDatasetTypeName[] = "flowtrain.data.ValuesDataset";

// `tensor` as a TensorProto when it is a DT_VARIANT scalar holding a ValuesDataset (its
// elements' components in variant_val[0].tensors, the component count in metadata); false
// otherwise.
bool ValuesDatasetToProto(const Tensor& tensor, tensorflow::TensorProto* proto);
// The inverse: true and *tensor set when `proto` holds a ValuesDataset; DataLoss when it claims
// to but is malformed.
bool ValuesDatasetFromProto(const tensorflow::TensorProto& proto, Tensor* tensor);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_FRAMEWORK_VALUES_DATASET_H_
