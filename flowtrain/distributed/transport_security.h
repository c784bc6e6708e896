// TransportSecurity: how the tasks of a cluster and their clients prove who they are — TLS
// (optionally mutual) on every connection and a shared token on every call. With the default
// (all empty) a cluster speaks plaintext and serves anyone who reaches its ports, as TF's
// servers do; set it on every Server of the cluster and on remote clients.
//
//   distributed::TransportSecurity security{.certificate_file = "tls/task.pem",
//                                           .private_key_file = "tls/task.key",
//                                           .ca_file = "tls/ca.pem",
//                                           .token = distributed::ReadTokenFile("tls/token")};
//   distributed::Server server({.cluster = cluster, .job_name = "worker", .security = security});
//   auto sess = NewSession(graph, {.target = server.target()});  // uses the server's security
//
// A session whose target is a server of the same process uses that server's security, so
// between-graph replication needs nothing more. A client with no server of its own (a tool,
// a remote evaluator) calls SetClientSecurity(target, security) before its first session.
//
// A server with a token answers a call that lacks it (or carries another) with
// Unauthenticated and does nothing else; a server with require_client_certificate completes
// the TLS handshake only with clients whose certificate chains to ca_file. The task that
// pushes tensors to another task is a client too: it presents the same certificate and token.
#ifndef FLOWTRAIN_DISTRIBUTED_TRANSPORT_SECURITY_H_
#define FLOWTRAIN_DISTRIBUTED_TRANSPORT_SECURITY_H_

#include <string>
#include <string_view>

namespace flowtrain::distributed {

struct TransportSecurity {
  // TLS, when any of the three files is set. certificate_file (a PEM chain) and
  // private_key_file are what this side presents: required on a server, and on a client of
  // a server that requires client certificates. ca_file is the PEM bundle the other side's
  // certificate must chain to (a client with none trusts the system's roots; a server with
  // none cannot require client certificates).
  std::string certificate_file;
  std::string private_key_file;
  std::string ca_file;
  // Servers: mutual TLS (a client without a certificate chaining to ca_file is refused).
  bool require_client_certificate = false;
  // Clients: the name servers' certificates are checked against instead of the host of their
  // address (a cluster addressed by IP with certificates issued for a name).
  std::string server_name_override;
  // A shared secret every call carries (as "authorization: Bearer <token>") and every server
  // checks; "" = none. Printable ASCII without spaces.
  std::string token;

  bool tls() const { return !certificate_file.empty() || !private_key_file.empty() || !ca_file.empty(); }
  bool operator==(const TransportSecurity&) const = default;
};

// InvalidArgument naming what is inconsistent: a certificate without its key or the other
// way round, a server with TLS but no certificate (`for_server`), a client certificate
// requirement without TLS or without a CA, a token with characters a header cannot carry.
void ValidateTransportSecurity(const TransportSecurity& security, bool for_server);

// The token in the file at `path` with surrounding whitespace removed (a token on a command
// line would show in the process list). NotFound when the file cannot be read,
// InvalidArgument when it holds no token.
std::string ReadTokenFile(const std::string& path);

// The security sessions of `target` ("grpc://host:port" or "host:port") use, and their
// calls to the other tasks of its cluster. Replaces what was set for it. Thread-safe.
// Throws as ValidateTransportSecurity.
void SetClientSecurity(std::string_view target, const TransportSecurity& security);
// What SetClientSecurity (or a server of this process, for its own target) set for
// `target`; the default (plaintext, no token) otherwise.
TransportSecurity ClientSecurityFor(std::string_view target);
// Forgets what was set for `target`.
void ClearClientSecurity(std::string_view target);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_TRANSPORT_SECURITY_H_
