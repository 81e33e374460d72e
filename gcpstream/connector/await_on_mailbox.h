#ifndef GCPSTREAM_CONNECTOR_AWAIT_ON_MAILBOX_H_
#define GCPSTREAM_CONNECTOR_AWAIT_ON_MAILBOX_H_

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "gcpstream/api/mailbox.h"
#include "gcpstream/api/status_macros.h"

namespace gcpstream::connector {

// Starts an asynchronous call and waits for its answer by yielding to the writer's mailbox, so
// completions keep running meanwhile. `call` receives the callback to hand to the client; the
// callback may run on any thread (it posts the answer as a mail, described by `what`, a string
// literal). No deadline of its own: the client's call must carry one. Returns the answer, or
// the mailbox's error (CANCELLED when the subtask is cancelled).
template <typename T>
absl::StatusOr<T> AwaitOnMailbox(MailboxExecutor& mailbox, const char* what,
                                 absl::FunctionRef<void(std::function<void(T)>)> call) {
  auto result = std::make_shared<std::optional<T>>();
  MailboxExecutor* executor = &mailbox;
  call([result, executor, what](T value) {
    executor->execute(
        [result, value = std::move(value)]() mutable {
          *result = std::move(value);
          return absl::OkStatus();
        },
        what);
  });
  GCP_RETURN_IF_ERROR(mailbox.yield_until([&] { return result->has_value(); }));
  return std::move(**result);
}

}  // namespace gcpstream::connector

#endif  // GCPSTREAM_CONNECTOR_AWAIT_ON_MAILBOX_H_
