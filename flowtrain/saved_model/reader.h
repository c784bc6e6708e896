// Reading a SavedModel directory without running it (TF's cc/saved_model/reader.h): the
// SavedModel proto, the MetaGraph of a tag set, the tag sets present. What saved_model::Load
// and `saved_model_cli show` build on.
//
//   tensorflow::SavedModel model = saved_model::ReadSavedModel("export/1");
//   const tensorflow::MetaGraphDef& serving = saved_model::FindMetaGraphDef(model, {"serve"}, "export/1");
//   for (const auto& [key, signature] : serving.signature_def()) ...
#ifndef FLOWTRAIN_SAVED_MODEL_READER_H_
#define FLOWTRAIN_SAVED_MODEL_READER_H_

#include <set>
#include <string>
#include <vector>

#include "flowtrain/proto/meta_graph.pb.h"

namespace flowtrain::saved_model {

// Whether `export_dir` holds saved_model.pb or saved_model.pbtxt (TF's
// MaybeSavedModelDirectory: a cheap check, the file is not parsed).
bool MaybeSavedModelDirectory(const std::string& export_dir);

// The SavedModel proto of `export_dir`: saved_model.pb if present, else saved_model.pbtxt.
// NotFound naming the directory if it (or both files) is missing; DataLoss naming the file if
// the binary file does not parse, InvalidArgument naming the file (and the parser's line) if
// the text file does not.
tensorflow::SavedModel ReadSavedModel(const std::string& export_dir);

// The tag set of each MetaGraph of `saved_model`, in order (duplicates within a set removed).
std::vector<std::set<std::string>> GetTagSets(const tensorflow::SavedModel& saved_model);

// The MetaGraph whose tag set equals `tags` (compared as sets, as TF). NotFound otherwise, with
// TF's wording and the tag sets present: "MetaGraphDef associated with tags {'serve'} could not
// be found in SavedModel export/1, with available tags '[['train']]'...". `export_dir` only
// names the model in the message.
const tensorflow::MetaGraphDef& FindMetaGraphDef(const tensorflow::SavedModel& saved_model,
                                                 const std::vector<std::string>& tags,
                                                 const std::string& export_dir = "");

// ReadSavedModel and FindMetaGraphDef in one (TF's ReadMetaGraphDefFromSavedModel).
tensorflow::MetaGraphDef ReadMetaGraphDefFromSavedModel(const std::string& export_dir,
                                                        const std::vector<std::string>& tags);

}  // namespace flowtrain::saved_model

#endif  // FLOWTRAIN_SAVED_MODEL_READER_H_
