#include "flowtrain/saved_model/reader.h"

#include <climits>
#include <filesystem>
#include <system_error>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/saved_model/constants.h"

namespace flowtrain::saved_model {
namespace {

// Keeps the text parser's first error, so that it can be named in the exception.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first_.empty()) first_ = StrCat("line ", line + 1, " column ", column + 1, ": ", message);
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

// Python's str() of a list of tags: "['serve', 'gpu']".
std::string TagListString(const std::vector<std::string>& tags) {
  std::string out = "[";
  for (size_t i = 0; i < tags.size(); ++i) out += StrCat(i ? ", " : "", "'", tags[i], "'");
  return out + "]";
}

}  // namespace

bool MaybeSavedModelDirectory(const std::string& export_dir) {
  return FileExists(JoinPath(export_dir, kSavedModelFilenamePb)) ||
         FileExists(JoinPath(export_dir, kSavedModelFilenamePbTxt));
}

tensorflow::SavedModel ReadSavedModel(const std::string& export_dir) {
  tensorflow::SavedModel saved_model;
  const std::string pb = JoinPath(export_dir, kSavedModelFilenamePb);
  const std::string pbtxt = JoinPath(export_dir, kSavedModelFilenamePbTxt);
  if (FileExists(pb)) {
    const std::string bytes = ReadFileToString(pb);
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                              static_cast<int>(bytes.size()));
    in.SetTotalBytesLimit(INT_MAX);  // graphs with large constants exceed protobuf's default
    if (!saved_model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      DataLoss("Could not parse SavedModel file ", pb,
               ": it is not a valid SavedModel proto (damaged or truncated)");
    }
    return saved_model;
  }
  if (FileExists(pbtxt)) {
    google::protobuf::TextFormat::Parser parser;
    FirstErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(ReadFileToString(pbtxt), &saved_model)) {
      InvalidArgument("Could not parse SavedModel text file ", pbtxt, ": ", errors.first());
    }
    return saved_model;
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(export_dir, ec)) {
    NotFound("SavedModel directory ", export_dir, " does not exist");
  }
  NotFound("SavedModel file does not exist at: ", export_dir, "/{", kSavedModelFilenamePbTxt, "|",
           kSavedModelFilenamePb, "}");
}

std::vector<std::set<std::string>> GetTagSets(const tensorflow::SavedModel& saved_model) {
  std::vector<std::set<std::string>> tag_sets;
  for (const tensorflow::MetaGraphDef& meta : saved_model.meta_graphs()) {
    const auto& tags = meta.meta_info_def().tags();
    tag_sets.emplace_back(tags.begin(), tags.end());
  }
  return tag_sets;
}

const tensorflow::MetaGraphDef& FindMetaGraphDef(const tensorflow::SavedModel& saved_model,
                                                 const std::vector<std::string>& tags,
                                                 const std::string& export_dir) {
  const std::set<std::string> wanted(tags.begin(), tags.end());
  std::string available = "[";
  for (const tensorflow::MetaGraphDef& meta : saved_model.meta_graphs()) {
    const auto& meta_tags = meta.meta_info_def().tags();
    if (std::set<std::string>(meta_tags.begin(), meta_tags.end()) == wanted) return meta;
    available += StrCat(available.size() > 1 ? ", " : "",
                        TagListString(std::vector<std::string>(meta_tags.begin(), meta_tags.end())));
  }
  available += "]";
  std::string wanted_list = TagListString(tags);
  NotFound("MetaGraphDef associated with tags ", wanted_list.substr(1, wanted_list.size() - 2),
           " could not be found in SavedModel", export_dir.empty() ? "" : " ", export_dir,
           ", with available tags '", available,
           "'. To inspect available tag-sets in the SavedModel, please use the SavedModel CLI: "
           "`saved_model_cli`.");
}

tensorflow::MetaGraphDef ReadMetaGraphDefFromSavedModel(const std::string& export_dir,
                                                        const std::vector<std::string>& tags) {
  const tensorflow::SavedModel saved_model = ReadSavedModel(export_dir);
  return FindMetaGraphDef(saved_model, tags, export_dir);
}

}  // namespace flowtrain::saved_model
