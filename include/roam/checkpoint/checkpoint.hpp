// roam — checkpoint and restart: save every mobile object and every checkpointed node_local
// to a directory, and start a later run from it, on the same or another node count
// (docs/guide/checkpoint.md, ADR 50).
//
//   roam::node_local<driver> state(roam::checkpointed{"driver"});   // a global
//   roam::run(argc, argv, [] {
//     if (!roam::restarted()) make the objects ...
//     for (; state->step < steps; ++state->step) {
//       ... one step, ending in roam::barrier_all_handled() ...
//       if (state->step % 100 == 99) roam::checkpoint("ckpt");
//     }
//   });
//   ./app --roam-restart ckpt      # goes on from the last checkpoint
#pragma once

#include <roam/checkpoint/restart_settings.hpp>

#include <string>

namespace roam {

/// Writes a checkpoint of the job into directory `dir` (created if missing; a relative path
/// is taken from each process's working directory, and under MPI every rank must reach the
/// same directory, on a shared file system): every mobile object, and every node's instance of each
/// checkpointed node_local (roam::checkpointed). A later run with `--roam-restart dir` starts with
/// them.
///
/// - Collective: every node's application thread calls it, with the same `dir`, like
///   roam::barrier(). It first waits until every message sent anywhere has been handled, as
///   roam::barrier_all_handled() does, so the checkpoint is a consistent cut; load balancing
///   moves nothing until it returns. Nothing may send meanwhile from threads the
///   application started itself.
/// - A checkpoint replaces the previous one in `dir` only once it is complete (its manifest
///   is written last, then the previous files are removed): a crash while writing leaves the
///   previous checkpoint intact.
/// - Throws roam::checkpoint_error on every node if any node could not write its part (the
///   message names the node and the reason; the previous checkpoint stays); the run goes
///   on. Throws roam::usage_error off the application thread of a node.
/// - Objects are saved with their serialization (the same as migration's); a node_local
///   that a node never used is not saved for that node.
void checkpoint(const std::string& dir);

/// True in a run that started from a checkpoint (--roam-restart), on every node: the
/// objects and checkpointed node_locals of the checkpoint exist before the body starts.
/// Throws roam::usage_error on a thread of no node.
bool restarted();

namespace detail {
/// Including this header links the checkpoint layer (so that --roam-restart works in every
/// program that includes it, whether or not it calls roam::checkpoint).
bool link_checkpoint_layer() noexcept;
inline const bool checkpoint_layer_linked = link_checkpoint_layer();
}  // namespace detail

}  // namespace roam
