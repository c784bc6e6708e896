// The process-wide registry of the C++ functions that dataset transformations call
// (Dataset::Map, Dataset::Filter). A C++ lambda cannot be stored in a GraphDef, so the builder
// registers it under a unique name and the MapDataset/FilterDataset node carries that name in
// its `f`/`predicate` func attr; the kernel looks the function up by name. A graph written
// out and read back in the same process therefore still runs; in another process its map
// nodes fail with NotFound naming the function. Functions are never unregistered: a program
// builds a bounded number of pipelines.
//
//   std::string name = data::RegisterMapFunction("normalize", [](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{Scale(in[0])};
//   });
//   const data::MapFunction& fn = data::LookupMapFunction(name);
#ifndef FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_
#define FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"

namespace flowtrain::data {

// Maps one element (tuple of tensors) to another. May throw; the error reaches Session::Run.
using MapFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// Keeps an element when it returns true.
using PredicateFunction = std::function<bool(const std::vector<Tensor>&)>;

// Register under "<hint>_<unique number>" and return that name.
std::string RegisterMapFunction(std::string_view hint, MapFunction fn);
std::string RegisterPredicateFunction(std::string_view hint, PredicateFunction fn);
// NotFound naming `name` if it was not registered in this process.
const MapFunction& LookupMapFunction(const std::string& name);
const PredicateFunction& LookupPredicateFunction(const std::string& name);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_
