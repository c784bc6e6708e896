#include "flowtrain/distributed/transport_security.h"

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/synchronization/mutex.h"

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"

namespace flowtrain::distributed {
namespace {

// "grpc://host:port" and "host:port" name the same target.
std::string_view TargetAddress(std::string_view target) {
  constexpr std::string_view kScheme = "grpc://";
  if (target.substr(0, kScheme.size()) == kScheme) target.remove_prefix(kScheme.size());
  return target;
}

struct ClientSecurityRegistry {
  absl::Mutex mu;
  std::map<std::string, TransportSecurity, std::less<>> by_address ABSL_GUARDED_BY(mu);
};

ClientSecurityRegistry& Registry() {
  static auto* registry = new ClientSecurityRegistry;  // never destroyed: used at exit
  return *registry;
}

}  // namespace

void ValidateTransportSecurity(const TransportSecurity& security, bool for_server) {
  if (security.certificate_file.empty() != security.private_key_file.empty()) {
    InvalidArgument("TransportSecurity: certificate_file and private_key_file go together (got ",
                    security.certificate_file.empty() ? "a key" : "a certificate", " without the other)");
  }
  if (for_server && security.tls() && security.certificate_file.empty()) {
    InvalidArgument("TransportSecurity: a server with TLS needs certificate_file and private_key_file");
  }
  if (security.require_client_certificate && (!security.tls() || security.ca_file.empty())) {
    InvalidArgument(
        "TransportSecurity: require_client_certificate needs TLS and the ca_file that client "
        "certificates chain to");
  }
  for (char c : security.token) {
    if (c <= ' ' || c > '~') {
      InvalidArgument("TransportSecurity: the token may hold only printable ASCII without spaces (character ",
                      static_cast<int>(static_cast<unsigned char>(c)), ")");
    }
  }
}

std::string ReadTokenFile(const std::string& path) {
  std::string token(absl::StripAsciiWhitespace(ReadFileToString(path)));
  if (token.empty()) InvalidArgument("Token file ", path, " holds no token");
  return token;
}

void SetClientSecurity(std::string_view target, const TransportSecurity& security) {
  ValidateTransportSecurity(security, /*for_server=*/false);
  ClientSecurityRegistry& registry = Registry();
  absl::MutexLock lock(&registry.mu);
  registry.by_address.insert_or_assign(std::string(TargetAddress(target)), security);
}

TransportSecurity ClientSecurityFor(std::string_view target) {
  ClientSecurityRegistry& registry = Registry();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.by_address.find(TargetAddress(target));
  return it == registry.by_address.end() ? TransportSecurity{} : it->second;
}

void ClearClientSecurity(std::string_view target) {
  ClientSecurityRegistry& registry = Registry();
  absl::MutexLock lock(&registry.mu);
  auto it = registry.by_address.find(TargetAddress(target));
  if (it != registry.by_address.end()) registry.by_address.erase(it);
}

}  // namespace flowtrain::distributed
