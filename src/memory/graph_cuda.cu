// Conditional work in a captured CUDA graph (coalesce/memory/graph.hpp): a conditional handle made
// in the graph being captured, and an IF node whose body is captured from the same stream.
#include <coalesce/memory/graph.hpp>

#include "../core/cuda_check.hpp"

namespace coalesce::detail {

namespace {
// The graph being captured on s and the nodes its next work depends on; an error naming the
// call when s is not capturing.
cudaGraph_t capturing_graph(cudaStream_t s, char const* call, cudaGraphNode_t const** dependencies,
                            std::size_t* count) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  COALESCE_CUDA_TRY(cudaStreamGetCaptureInfo(s, &status, nullptr, &graph, dependencies, nullptr, count));
  if (status != cudaStreamCaptureStatusActive) {
    throw_error(std::string(call) +
                ": the stream is not capturing a CUDA graph; call it between cudaStreamBeginCapture(s, ...) and "
                "cudaStreamEndCapture(s, ...) on the stream you pass");
  }
  return graph;
}
}  // namespace

std::uint64_t make_graph_condition(void* capturing) {
  auto const s = static_cast<cudaStream_t>(capturing);
  cudaGraph_t const graph = capturing_graph(s, "coalesce::make_graph_condition", nullptr, nullptr);
  cudaGraphConditionalHandle handle = 0;
  // Zero at every launch unless a kernel sets it: a replay whose setter did not run skips the body.
  COALESCE_CUDA_TRY(cudaGraphConditionalHandleCreate(&handle, graph, 0, cudaGraphCondAssignDefault));
  return static_cast<std::uint64_t>(handle);
}

if_body begin_if_body(void* capturing, std::uint64_t condition) {
  auto const s = static_cast<cudaStream_t>(capturing);
  cudaGraphNode_t const* dependencies = nullptr;
  std::size_t count = 0;
  cudaGraph_t const graph = capturing_graph(s, "coalesce::capture_if", &dependencies, &count);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = static_cast<cudaGraphConditionalHandle>(condition);
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t node = nullptr;
  COALESCE_CUDA_TRY(cudaGraphAddNode(&node, graph, dependencies, nullptr, count, &params));
  cudaGraph_t const body = params.conditional.phGraph_out[0];
  // A stream captures into one graph at a time: the outer capture ends here (its graph stays the
  // caller's) and resumes after the node in end_if_body.
  cudaGraph_t ended = nullptr;
  COALESCE_CUDA_TRY(cudaStreamEndCapture(s, &ended));
  cudaError_t const began = cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0, cudaStreamCaptureModeGlobal);
  if (began != cudaSuccess) {
    // The caller's capture goes on after the node (its cudaStreamEndCapture still ends it).
    (void)cudaGetLastError();
    (void)cudaStreamBeginCaptureToGraph(s, graph, &node, nullptr, 1, cudaStreamCaptureModeGlobal);
    COALESCE_CUDA_TRY(began);
  }
  return {node, graph};
}

void end_if_body(void* capturing, if_body const& if_node) {
  auto const s = static_cast<cudaStream_t>(capturing);
  auto node = static_cast<cudaGraphNode_t>(if_node.node);
  auto const outer = static_cast<cudaGraph_t>(if_node.outer);
  cudaGraph_t body = nullptr;
  // The outer capture resumes even when the body's capture broke (a wait inside the body): the
  // error is reported after, and the caller's cudaStreamEndCapture still finds a capture to end.
  cudaError_t const ended = cudaStreamEndCapture(s, &body);
  (void)cudaGetLastError();
  COALESCE_CUDA_TRY(cudaStreamBeginCaptureToGraph(s, outer, &node, nullptr, 1, cudaStreamCaptureModeGlobal));
  if (ended != cudaSuccess) {
    throw_error(std::string("coalesce::capture_if: the body's capture failed (") + cudaGetErrorString(ended) +
                "): the body may only queue work on the capturing stream, without waiting or allocating");
  }
}

}  // namespace coalesce::detail
