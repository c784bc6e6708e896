#include "flowtrain/ops/reader_ops.h"

#include "flowtrain/graph/node_builder.h"
#include "flowtrain/graph/shape_inference.h"

namespace flowtrain {

FT_REGISTER_OP("TFRecordReaderV2")
    .Output("reader_handle: resource")
    .Attr("container: string = ''")
    .Attr("shared_name: string = ''")
    .Attr("compression_type: string = ''")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

FT_REGISTER_OP("ReaderReadV2")
    .Input("reader_handle: resource")
    .Input("queue_handle: resource")
    .Output("key: string")
    .Output("value: string")
    .SetIsStateful()
    .SetShapeFn(shape_fns::ScalarShape);

namespace ops {

TFRecordReader::TFRecordReader(const TFRecordReaderOptions& options)
    : handle_(NodeBuilder("TFRecordReaderV2", options.name)
                  .Attr("container", options.container)
                  .Attr("shared_name", options.shared_name)
                  .Attr("compression_type", options.compression_type)
                  .Finalize()) {}

std::pair<Output, Output> TFRecordReader::Read(const QueueBase& filename_queue, std::string_view name) const {
  Operation op = NodeBuilder("ReaderReadV2", name).Input(handle_).Input(filename_queue.handle()).Finalize();
  return {op.output(0), op.output(1)};
}

}  // namespace ops
}  // namespace flowtrain
