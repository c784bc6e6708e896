// The process-wide registry of the C++ functions that dataset transformations call
// (Dataset::Map, Dataset::Filter). A C++ lambda cannot be stored in a GraphDef, so the builder
// registers it under a unique name and the MapDataset/FilterDataset node carries that name in
// its `f`/`predicate` func attr; the kernel looks the function up by name. A graph written
// out and read back in the same process therefore still runs; in another process its map
// nodes fail with NotFound naming the function. Functions are never unregistered: a program
// builds a bounded number of pipelines. A name registered here takes precedence over a function
// of the same name in the graph's library (how TF serialises its tf.data functions: see
// kernels/internal/dataset_function.h).
//
//   std::string name = data::RegisterMapFunction("normalize", [](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{Scale(in[0])};
//   });
//   const data::RegisteredMapFunction& fn = data::LookupMapFunction(name);
//
// Elements read from files carry their RecordOrigins (file and record index of each record
// they hold) through the pipeline, so that errors can name the record that caused them; a map
// function registered as an OriginAwareMapFunction is given them (ops::MapParseExample names
// the bad Example of a batch with them).
#ifndef FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_
#define FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "flowtrain/core/tensor.h"

namespace flowtrain::data {

// Where a record an element holds was read from. TFRecordDataset gives each element one;
// Shuffle, Prefetch, Filter, Take... keep them; Batch gives a batch one per row (when each of
// its elements came from one record) and Map keeps a single record's. Elements made from
// memory have none.
struct RecordOrigin {
  std::shared_ptr<const std::string> file;
  int64_t index = 0;  // the record's position in the file, from 0
};
using RecordOrigins = std::vector<RecordOrigin>;

// "record 17 of /data/train.tfrecord"
std::string DescribeRecord(const RecordOrigin& origin);
// The element as a whole, for errors: DescribeRecord of a single record, or "a batch of 64
// records, the first record 128 of /data/train.tfrecord".
std::string DescribeOrigins(const RecordOrigins& origins);

// Maps one element (tuple of tensors) to another. May throw; the error reaches Session::Run,
// preceded by the origin of the element when it was read from a file ("In record 17 of ...: ").
using MapFunction = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// A map function that is also given the element's origins (empty when unknown) and names the
// offending record in its errors itself.
using OriginAwareMapFunction =
    std::function<std::vector<Tensor>(const std::vector<Tensor>&, const RecordOrigins&)>;
// What the registry holds for either kind.
struct RegisteredMapFunction {
  OriginAwareMapFunction fn;
  bool names_records = false;  // true for an OriginAwareMapFunction
};
// Keeps an element when it returns true.
using PredicateFunction = std::function<bool(const std::vector<Tensor>&)>;

// Register under "<hint>_<unique number>" and return that name.
std::string RegisterMapFunction(std::string_view hint, MapFunction fn);
std::string RegisterMapFunction(std::string_view hint, OriginAwareMapFunction fn);
std::string RegisterPredicateFunction(std::string_view hint, PredicateFunction fn);
// NotFound naming `name` if it was not registered in this process.
const RegisteredMapFunction& LookupMapFunction(const std::string& name);
const PredicateFunction& LookupPredicateFunction(const std::string& name);
// nullptr if `name` was not registered in this process (the dataset kernels then look for a
// function of that name in the graph's library).
const RegisteredMapFunction* FindMapFunction(const std::string& name);
const PredicateFunction* FindPredicateFunction(const std::string& name);

}  // namespace flowtrain::data

#endif  // FLOWTRAIN_OPS_DATASET_FUNCTIONS_H_
