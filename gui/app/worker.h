// Runs work on Qt's thread pool and hands its result to a GUI-thread callback, always queued.
//
// QFuture::then(context, f) calls f at once, inside the call that attaches it, when the worker has
// already finished (Qt 6.4 invokes it directly from the context's own thread). Callers that change
// state right after starting a job (a new document, a new selection) would then see the old job's
// result land in the middle of their own call. runOnWorker always posts the result to the
// context's event queue, so it arrives after the current call returns, and never after the
// context is destroyed.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QtConcurrent/QtConcurrentRun>

#include <type_traits>
#include <utility>

namespace tscope::gui {

template <typename Work, typename Done>
void runOnWorker(QObject* context, Work&& work, Done&& done) {
  using Result = std::invoke_result_t<std::decay_t<Work>>;
  QtConcurrent::run(std::forward<Work>(work))
      .then(context, [context, done = std::forward<Done>(done)](Result result) mutable {
        QMetaObject::invokeMethod(
            context,
            [done = std::move(done), result = std::move(result)]() mutable {
              done(std::move(result));
            },
            Qt::QueuedConnection);
      });
}

}  // namespace tscope::gui
