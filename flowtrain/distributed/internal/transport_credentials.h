// The gRPC side of TransportSecurity: the credentials of servers and channels, the token
// every call carries and its check on the server. Internal to flowtrain/distributed.
//
//   builder.AddListeningPort(address, ServerCredentialsFor(security), &port);
//   auto channel = NewSecureChannel(address, security, args);
//   if (grpc::Status denied = CheckCallToken(*context, token); !denied.ok()) return denied;
#ifndef FLOWTRAIN_DISTRIBUTED_INTERNAL_TRANSPORT_CREDENTIALS_H_
#define FLOWTRAIN_DISTRIBUTED_INTERNAL_TRANSPORT_CREDENTIALS_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "flowtrain/distributed/transport_security.h"

namespace flowtrain::distributed {

// TLS server credentials with the PEM files read now, or insecure ones without TLS. Throws
// as ValidateTransportSecurity, and NotFound naming a file that cannot be read.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const TransportSecurity& security);

// A channel to `address` with the TLS credentials of `security` (files read now, errors as
// above) and an interceptor adding its token to every call.
std::shared_ptr<grpc::Channel> NewSecureChannel(const std::string& address, const TransportSecurity& security,
                                                grpc::ChannelArguments args);

// OK when `token` is empty or the call carries it; Unauthenticated otherwise (marked as the
// service's own error, see ToRpcStatus). Compares in time independent of where they differ.
grpc::Status CheckCallToken(const grpc::ServerContext& context, const std::string& token);

}  // namespace flowtrain::distributed

#endif  // FLOWTRAIN_DISTRIBUTED_INTERNAL_TRANSPORT_CREDENTIALS_H_
