#include "flowtrain/distributed/internal/transport_credentials.h"

#include <vector>

#include "flowtrain/core/error.h"
#include "flowtrain/core/file_util.h"
#include "flowtrain/core/str_util.h"
#include "flowtrain/distributed/internal/rpc_util.h"

namespace flowtrain::distributed {
namespace {

constexpr char kAuthorizationHeader[] = "authorization";
constexpr std::string_view kBearerPrefix = "Bearer ";

std::string ReadPem(const std::string& path, std::string_view what) {
  if (path.empty()) return "";
  try {
    return ReadFileToString(path);
  } catch (const Error& e) {
    NotFound("TransportSecurity: could not read the ", what, ": ", e.what());
  }
}

// Adds "authorization: Bearer <token>" to the initial metadata of every call of a channel.
class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(std::string header) : header_(std::move(header)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({kAuthorizationHeader, header_});
    }
    methods->Proceed();
  }

 private:
  const std::string header_;
};

class TokenInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string_view token) : header_(StrCat(kBearerPrefix, token)) {}

  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo*) override {
    return new TokenInterceptor(header_);
  }

 private:
  const std::string header_;
};

// Equal strings, in time that depends on the lengths only.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const TransportSecurity& security) {
  ValidateTransportSecurity(security, /*for_server=*/true);
  if (!security.tls()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(security.require_client_certificate
                                                ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                                : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_root_certs = ReadPem(security.ca_file, "CA bundle");
  options.pem_key_cert_pairs.push_back({ReadPem(security.private_key_file, "private key"),
                                        ReadPem(security.certificate_file, "certificate chain")});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::Channel> NewSecureChannel(const std::string& address, const TransportSecurity& security,
                                                grpc::ChannelArguments args) {
  ValidateTransportSecurity(security, /*for_server=*/false);
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (security.tls()) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadPem(security.ca_file, "CA bundle");
    options.pem_private_key = ReadPem(security.private_key_file, "private key");
    options.pem_cert_chain = ReadPem(security.certificate_file, "certificate chain");
    credentials = grpc::SslCredentials(options);
    if (!security.server_name_override.empty()) {
      args.SetSslTargetNameOverride(security.server_name_override);
    }
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (!security.token.empty())
    interceptors.push_back(std::make_unique<TokenInterceptorFactory>(security.token));
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, credentials, args,
                                                                 std::move(interceptors));
}

grpc::Status CheckCallToken(const grpc::ServerContext& context, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  auto [begin, end] = context.client_metadata().equal_range(kAuthorizationHeader);
  bool authenticated = false;
  for (auto it = begin; it != end; ++it) {
    std::string_view value(it->second.data(), it->second.size());
    if (value.substr(0, kBearerPrefix.size()) == kBearerPrefix) {
      authenticated |= ConstantTimeEquals(value.substr(kBearerPrefix.size()), token);
    }
  }
  if (authenticated) return grpc::Status::OK;
  return ToRpcStatus([&] {
    Unauthenticated(begin == end ? "The call carries no token" : "The call's token is not this server's",
                    " (the server was started with TransportSecurity::token)");
  });
}

}  // namespace flowtrain::distributed
