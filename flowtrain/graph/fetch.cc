#include "flowtrain/graph/fetch.h"

#include "flowtrain/core/error.h"

namespace flowtrain {

const Fetch& FetchList::at(size_t i) const {
  if (i >= fetches_.size()) {
    InvalidArgument("Fetch index ", i, " is out of range for a list of ", fetches_.size(), " fetches");
  }
  return fetches_[i];
}

}  // namespace flowtrain
