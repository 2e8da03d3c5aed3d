// coalesce/memory/graph.hpp - work that a CUDA graph runs only when a kernel says so: a condition
// made in the graph being captured, and the part of the capture that runs only when it is set.
//
//   // s: a stream capturing a CUDA graph (cudaStreamBeginCapture(s, ...) before, cudaStreamEndCapture after)
//   coalesce::verlet_list<coalesce::padded_columns> nl({.cutoff = 1.0, .skin = 0.3});
//   nl.build(d, &Particle::pos, box);                               // before the capture: cells, width
//   coalesce::graph_condition const moved = coalesce::make_graph_condition(s);
//   nl.set_rebuild_condition(d, &Particle::pos, moved, s);          // 1 when one moved > skin / 2
//   coalesce::capture_if(s, moved, [&] { nl.refill(d, &Particle::pos, box, s); });
//   // ... the force kernel over nl.view() on s: every replay; the refill only when the condition is set
//
// make_graph_condition creates a conditional handle (cudaGraphConditionalHandle) in the graph being
// captured on `capturing`; a kernel of the capture sets it (coalesce's set_rebuild_condition, or
// cudaGraphSetConditional in a kernel of yours) before capture_if's node runs. capture_if records
// what body() queues on `capturing` as the body of an IF node: replays run it only when the
// condition is non-zero. The body may queue kernels, memsets and device-to-device copies on that
// stream (a conditional body holds no allocation, no host callback, no other stream); the capture
// then goes on in global capture mode. Streams forked from the capture must have joined it before
// capture_if (it ends the capture on `capturing` and resumes it after the IF node).
//
// GPU memory, CUDA 13 (conditional nodes came with 12.4; libcoalesce uses the 13.0 runtime's
// signatures of the capture calls). Without CUDA, or outside a capture, these throw coalesce::error.
// The condition is 0 at every launch unless a kernel sets it (cudaGraphCondAssignDefault).
// Keep the captured cudaGraph_t until its instantiated graph is destroyed: under compute-sanitizer,
// replays of a graph with an IF node whose cudaGraph_t was destroyed right after instantiation hit
// an illegal address (H200, CUDA 13.0; the same replays ran correctly without the sanitizer).
#pragma once
#include <cstdint>
#include <utility>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "stream.hpp"

namespace coalesce {

// A cudaGraphConditionalHandle (an integer), valid in the graph it was made for.
struct graph_condition {
  std::uint64_t handle = 0;  // what cudaGraphSetConditional takes in a kernel
};

namespace detail {
std::uint64_t make_graph_condition(void* capturing);
// The IF node and the graph it is in (a cudaGraphNode_t and a cudaGraph_t).
struct if_body {
  void* node = nullptr;
  void* outer = nullptr;
};
// Adds the IF node on `condition` after the capture's current work, ends the capture and starts
// capturing the node's body on the same stream.
if_body begin_if_body(void* capturing, std::uint64_t condition);
// Ends the body's capture and resumes the outer one after the IF node.
void end_if_body(void* capturing, if_body const& body);
}  // namespace detail

// A condition in the graph being captured on `capturing`, 0 at every launch until a kernel sets it;
// throws coalesce::error outside a capture or without CUDA.
inline graph_condition make_graph_condition(stream capturing) {
  return {detail::make_graph_condition(capturing.handle())};
}

// Captures what body() queues on `capturing` as the body of an IF node on `condition`: replays run
// it only when the condition is non-zero. An exception from body() ends the IF node's capture, resumes
// the outer one and is rethrown; throws coalesce::error outside a capture or without CUDA.
template <class Body> void capture_if(stream capturing, graph_condition condition, Body&& body) {
  detail::if_body const node = detail::begin_if_body(capturing.handle(), condition.handle);
  try {
    std::forward<Body>(body)();
  } catch (...) {
    // The outer capture resumes either way, so the caller's cudaStreamEndCapture still ends it.
    try {
      detail::end_if_body(capturing.handle(), node);
    } catch (...) {
    }
    throw;
  }
  detail::end_if_body(capturing.handle(), node);
}

}  // namespace coalesce
