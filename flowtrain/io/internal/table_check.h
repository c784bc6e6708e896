// Checks a LevelDB table's bytes (a checkpoint's `.index`) before LevelDB reads them. LevelDB
// trusts its blocks: a block handle's size is allocated before the read that would show it is
// past the end of the file, and an entry whose key and value lengths add up past 2^32 wraps its
// bounds check and is read gigabytes past the block. A table that passes this check is one
// LevelDB can iterate without reading outside the file's bytes or allocating more than a small
// multiple of them.
//
//   const std::string bytes = ReadFileToString(index_path);
//   CheckTableLayout(bytes, index_path);  // DataLoss naming index_path, or the table is sound
#ifndef FLOWTRAIN_IO_INTERNAL_TABLE_CHECK_H_
#define FLOWTRAIN_IO_INTERNAL_TABLE_CHECK_H_

#include <string>
#include <string_view>

namespace flowtrain::io {

// Checks the footer, the checksum, compression and entry layout of the index block, the
// metaindex block and every data block the index names. `table` is the whole file. Throws
// DataLoss naming `path` and what is wrong.
void CheckTableLayout(std::string_view table, const std::string& path);

}  // namespace flowtrain::io

#endif  // FLOWTRAIN_IO_INTERNAL_TABLE_CHECK_H_
