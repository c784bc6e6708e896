#include "flowtrain/framework/values_dataset.h"

#include <charconv>

#include "flowtrain/core/error.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/proto/tensor_proto_util.h"

namespace flowtrain::data {
namespace {

class ValuesIterator : public IteratorBase {
 public:
  ValuesIterator(const ValuesDataset& ds, std::string prefix) : IteratorBase(std::move(prefix)), ds_(ds) {}
  bool GetNext(IteratorContext&, std::vector<Tensor>* out) override {
    if (index_ >= static_cast<int64_t>(ds_.elements().size())) return false;
    *out = ds_.elements()[index_++];
    return true;
  }
  void Save(IteratorState& state) override { state.WriteInt(Key("index"), index_); }
  void Restore(IteratorState& state) override { index_ = state.ReadInt(Key("index")); }

 private:
  const ValuesDataset& ds_;
  int64_t index_ = 0;
};

}  // namespace

std::unique_ptr<IteratorBase> ValuesDataset::MakeIterator(const std::string& prefix) const {
  return std::make_unique<ValuesIterator>(*this, prefix + "::Values");
}

bool ValuesDatasetToProto(const Tensor& tensor, tensorflow::TensorProto* proto) {
  if (tensor.dtype() != DT_VARIANT || tensor.dims() != 0) return false;
  const DatasetRef* ref = std::any_cast<DatasetRef>(&tensor.scalar<std::any>());
  const auto* values = ref == nullptr ? nullptr : dynamic_cast<const ValuesDataset*>(ref->get());
  if (values == nullptr) return false;
  proto->Clear();
  proto->set_dtype(tensorflow::DT_VARIANT);
  proto->mutable_tensor_shape();
  tensorflow::VariantTensorDataProto* v = proto->add_variant_val();
  v->set_type_name(kValuesDatasetTypeName);
  const size_t components = values->elements().empty() ? 0 : values->elements()[0].size();
  v->set_metadata(StrCat(components));
  for (const auto& element : values->elements()) {
    if (element.size() != components) {
      InvalidArgument("ValuesDataset: elements of ", components, " and ", element.size(), " components");
    }
    for (const Tensor& t : element) *v->add_tensors() = TensorToProto(t);
  }
  return true;
}

bool ValuesDatasetFromProto(const tensorflow::TensorProto& proto, Tensor* tensor) {
  if (proto.dtype() != tensorflow::DT_VARIANT || proto.variant_val_size() != 1 ||
      proto.variant_val(0).type_name() != kValuesDatasetTypeName) {
    return false;
  }
  const tensorflow::VariantTensorDataProto& v = proto.variant_val(0);
  size_t components = 0;
  const std::string& m = v.metadata();
  auto [end, ec] = std::from_chars(m.data(), m.data() + m.size(), components);
  if (ec != std::errc() || end != m.data() + m.size() ||
      (components == 0 ? v.tensors_size() != 0 : v.tensors_size() % components != 0)) {
    DataLoss("Iterator state holds a malformed window dataset");
  }
  std::vector<std::vector<Tensor>> elements;
  for (int i = 0; i < v.tensors_size(); i += static_cast<int>(components)) {
    std::vector<Tensor> element;
    for (size_t c = 0; c < components; ++c)
      element.push_back(TensorFromProto(v.tensors(i + static_cast<int>(c))));
    elements.push_back(std::move(element));
  }
  *tensor = DatasetToTensor(std::make_shared<ValuesDataset>(std::move(elements)));
  return true;
}

}  // namespace flowtrain::data
