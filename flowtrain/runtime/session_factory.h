// Creates a session for a target string, as tf.Session(target=...): "" is an in-process
// Session with its own state; "inproc://NAME" is an in-process Session whose variables are
// shared by every session of the same NAME in this process (a chief and its workers in
// tests); other schemes ("grpc://host:port") are served by factories that other layers
// register (the distributed runtime registers "grpc://").
//
//   std::unique_ptr<SessionInterface> sess = NewSession(graph, options);   // options.target
//
//   RegisterSessionFactory("grpc://", [](Graph& g, const SessionOptions& o) { ... });
#ifndef FLOWTRAIN_RUNTIME_SESSION_FACTORY_H_
#define FLOWTRAIN_RUNTIME_SESSION_FACTORY_H_

#include <functional>
#include <memory>
#include <string>

#include "flowtrain/runtime/session.h"

namespace flowtrain {

using SessionFactory =
    std::function<std::unique_ptr<SessionInterface>(Graph& graph, const SessionOptions& options)>;

// Registers `factory` for targets starting with `prefix`; the longest matching prefix wins.
void RegisterSessionFactory(std::string prefix, SessionFactory factory);

// A session on `graph` for `options.target`; InvalidArgument naming the target when no
// factory serves it.
std::unique_ptr<SessionInterface> NewSession(Graph& graph, const SessionOptions& options = {});

}  // namespace flowtrain

#endif  // FLOWTRAIN_RUNTIME_SESSION_FACTORY_H_
