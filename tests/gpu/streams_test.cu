// Streams on the GPU: two plans on two streams at once give what one plan gives alone, and a
// steady-state reorder loop (a kernel, keys, sort_by_key, remap, apply) captures into a CUDA
// graph: capture fails on any host synchronisation or allocation, so a replay that matches the
// eager loop bit for bit shows the loop has neither.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <coalesce/coalesce.hpp>

#include "test_types.hpp"

using namespace coalesce_test;
using coalesce::detail::memory_kind;

namespace {

void check_cuda(cudaError_t status) { REQUIRE_MESSAGE(status == cudaSuccess, cudaGetErrorString(status)); }

std::vector<Particle> particles_in_box(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.0f, 16.0f);
  std::vector<Particle> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = {{u(rng), u(rng), u(rng)}, {u(rng), u(rng), u(rng)}, u(rng), static_cast<std::uint32_t>(i)};
  return out;
}

struct device_words {
  coalesce::detail::buffer memory;
  std::size_t n;
  explicit device_words(std::vector<std::uint32_t> const& values)
      : memory(memory_kind::device, values.size() * 4), n(values.size()) {
    coalesce::detail::copy_bytes(memory_kind::device, memory.data(), memory_kind::host, values.data(), n * 4);
  }
  std::uint32_t* data() { return reinterpret_cast<std::uint32_t*>(memory.data()); }
  std::vector<std::uint32_t> read() const {
    std::vector<std::uint32_t> out(n);
    coalesce::detail::copy_bytes(memory_kind::host, out.data(), memory_kind::device, memory.data(), n * 4);
    return out;
  }
};

coalesce::box const box16{.lo = {0, 0, 0}, .hi = {16, 16, 16}};

// Moves every particle along x (periodic), so each reorder step has something to sort.
template <class V> void drift(coalesce::stream s, V& v) {
  auto view = v.view();
  coalesce::for_each_index(coalesce::device{s}, view.size(), [=] __device__(std::size_t i) {
    float& x = view[i][&Particle::pos][&vec3::x];
    x += 0.37f + 0.001f * static_cast<float>(i % 7);
    if (x >= 16.0f) x -= 16.0f;
  });
}

template <class V> void reorder_step(coalesce::stream s, V& v,
                                     coalesce::device_neighbor_list<std::uint32_t> const& list, device_words& charge,
                                     coalesce::reorder_plan& plan) {
  drift(s, v);
  auto const keys = coalesce::hilbert_keys(v, &Particle::pos, box16, plan);
  coalesce::sort_by_key(v, keys, plan);
  coalesce::remap(list, plan);
  coalesce::apply(plan, coalesce::device_span<std::uint32_t>{charge.data(), charge.n});
}

// The same step through the _async forms (coalesce/reorder/async.hpp).
template <class V> void reorder_step_async(coalesce::stream s, V& v,
                                           coalesce::device_neighbor_list<std::uint32_t> const& list,
                                           device_words& charge, coalesce::reorder_plan& plan) {
  drift(s, v);
  auto const keys = coalesce::hilbert_keys_async(v, &Particle::pos, box16, plan);
  coalesce::sort_by_key_async(v, keys, plan);
  coalesce::remap_async(list, plan);
  coalesce::apply_async(plan, coalesce::device_span<std::uint32_t>{charge.data(), charge.n});
}

using coalesce_test::records_of;

bool same_records(std::vector<Particle> const& a, std::vector<Particle> const& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!same_bytes(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("two plans on two streams reorder independently and match the default stream") {
  std::size_t const n = 1 << 18, max = 8;
  cudaStream_t a = nullptr, b = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  check_cuda(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  std::mt19937 rng(4);
  std::vector<std::uint32_t> entries(n * max);
  for (auto& j : entries) j = static_cast<std::uint32_t>(rng() % n);
  std::vector<std::uint32_t> charges(n);
  for (auto& c : charges) c = static_cast<std::uint32_t>(rng());
  {
    auto const first = particles_in_box(n, 1), second = particles_in_box(n, 2);
    coalesce::device_vector<Particle, coalesce::soa> va{std::span<Particle const>(first), a},
        ref_a{std::span<Particle const>(first)};
    coalesce::device_vector<Particle, split_first> vb{std::span<Particle const>(second), b},
        ref_b{std::span<Particle const>(second)};
    device_words la(entries), lb(entries), ref_la(entries), ref_lb(entries), ca(charges), cb(charges), ref_ca(charges),
        ref_cb(charges);
    auto list = [&](device_words& w) {
      return coalesce::device_neighbor_list<std::uint32_t>{w.data(), n, max, coalesce::neighbor_order::column_major};
    };
    coalesce::reorder_plan plan_a(a), plan_b(b), ref_plan;
    for (int step = 0; step < 3; ++step) {
      reorder_step(a, va, list(la), ca, plan_a);  // queued on a ...
      reorder_step(b, vb, list(lb), cb, plan_b);  // ... and on b, each waiting only for its checks
      reorder_step(coalesce::stream{}, ref_a, list(ref_la), ref_ca, ref_plan);
      reorder_step(coalesce::stream{}, ref_b, list(ref_lb), ref_cb, ref_plan);
    }
    coalesce::synchronize(coalesce::stream(a));
    coalesce::synchronize(coalesce::stream(b));
    CHECK(same_records(records_of(va), records_of(ref_a)));
    CHECK(same_records(records_of(vb), records_of(ref_b)));
    CHECK(la.read() == ref_la.read());
    CHECK(lb.read() == ref_lb.read());
    CHECK(ca.read() == ref_ca.read());
    CHECK(cb.read() == ref_cb.read());
  }
  check_cuda(cudaStreamDestroy(a));
  check_cuda(cudaStreamDestroy(b));
}

// A steady-state loop of `step` (eager steps first, then two steps captured in global mode,
// which fails on any host wait or allocation) replayed, against the waiting calls run eagerly
// on the default stream: the same particles, list and charges bit for bit, and no plan
// allocations during capture. A graph replays addresses: a vector permuted by sort_by_key
// alternates between its allocation and the plan's scratch, so two steps are captured, which
// end where they began.
template <class Layout, class Step> void check_captured_loop(Step step, coalesce::check_policy policy, std::size_t n,
                                                             std::size_t max, int replays, unsigned seed) {
  cudaStream_t s = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::mt19937 rng(seed);
  std::vector<std::uint32_t> entries(n * max), charges(n);
  for (auto& j : entries) j = static_cast<std::uint32_t>(rng() % n);
  for (auto& c : charges) c = static_cast<std::uint32_t>(rng());
  auto const records = particles_in_box(n, seed);
  {
    coalesce::device_vector<Particle, Layout> v{std::span<Particle const>(records), s},
        ref{std::span<Particle const>(records)};
    device_words list_words(entries), ref_words(entries), charge(charges), ref_charge(charges);
    coalesce::device_neighbor_list<std::uint32_t> const list{list_words.data(), n, max,
                                                             coalesce::neighbor_order::column_major};
    coalesce::device_neighbor_list<std::uint32_t> const ref_list{ref_words.data(), n, max,
                                                                 coalesce::neighbor_order::column_major};
    coalesce::reorder_plan plan(s, policy), ref_plan;
    // Two eager steps fill the plan's pool; from then on the loop allocates nothing.
    for (int k = 0; k < 2; ++k) step(s, v, list, charge, plan);
    std::size_t const allocations = plan.allocations();
    cudaGraph_t graph = nullptr;
    check_cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int k = 0; k < 2; ++k) step(s, v, list, charge, plan);
    cudaError_t const ended = cudaStreamEndCapture(s, &graph);
    REQUIRE_MESSAGE(ended == cudaSuccess, "a call waited or allocated during capture: ", cudaGetErrorString(ended));
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(plan.allocations() == allocations);
    for (int r = 0; r < replays; ++r) check_cuda(cudaGraphLaunch(exec, s));
    check_cuda(cudaStreamSynchronize(s));
    plan.check();
    CHECK(plan.checks() == policy);
    for (int k = 0; k < 2 + 2 * replays; ++k) reorder_step(coalesce::stream{}, ref, ref_list, ref_charge, ref_plan);
    CHECK(same_records(records_of(v), records_of(ref)));
    CHECK(list_words.read() == ref_words.read());
    CHECK(charge.read() == ref_charge.read());
    check_cuda(cudaGraphExecDestroy(exec));
    check_cuda(cudaGraphDestroy(graph));
  }
  check_cuda(cudaStreamDestroy(s));
}

TEST_CASE("a steady-state reorder loop captures into a CUDA graph and replays as the eager loop runs") {
  // Deferred checks: nothing in the loop waits for the host.
  check_captured_loop<coalesce::aosoa<32>>([](auto&&... a) { reorder_step(a...); }, coalesce::check_policy::deferred,
                                           100003, 12, 3, 9);
}

// The _async forms never wait, whatever the plan's policy: a plan that checks before writing
// (its own calls wait for every verdict, so they could not be captured) captures a loop of
// _async steps.
TEST_CASE("_async forms on a plan that checks before writing capture into a CUDA graph") {
  check_captured_loop<coalesce::soa>([](auto&&... a) { reorder_step_async(a...); },
                                     coalesce::check_policy::before_writing, 50'001, 9, 1, 10);
}

// Constructors and resize() take no stream: their zero-fills and fills must be done when they
// return. Otherwise work the caller then puts on a non-blocking stream (which does not wait for
// the default stream) races with a fill still queued there and can be overwritten by it. The
// default stream is kept busy first so that a queued fill would surely run last.
TEST_CASE("memory that a constructor or resize() fills is filled when it returns, for work on a non-blocking stream") {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t const busy_bytes = std::size_t{1} << 30;
  void* busy = nullptr;
  check_cuda(cudaMalloc(&busy, busy_bytes));
  auto keep_default_stream_busy = [&] {
    for (int k = 0; k < 8; ++k) check_cuda(cudaMemsetAsync(busy, k, busy_bytes, nullptr));
  };
  std::size_t const n = 1 << 20;
  keep_default_stream_busy();
  coalesce::device_array<float> forces(n);  // zero-filled
  float* f = forces.data();
  coalesce::for_each_index(coalesce::device{stream}, n,
                           [=] __device__(std::size_t i) { f[i] = 1.0f + static_cast<float>(i); });
  keep_default_stream_busy();
  coalesce::device_vector<Particle> particles(n);  // value-initialised records
  particles.reserve(2 * n);  // so that resize() below only fills (a reallocation would free memory, which waits)
  keep_default_stream_busy();
  particles.resize(2 * n);  // and n more
  auto v = particles.view();
  coalesce::for_each_index(coalesce::device{stream}, 2 * n,
                           [=] __device__(std::size_t i) { v[i][&Particle::mass] = 2.0f; });
  check_cuda(cudaDeviceSynchronize());
  auto const got = forces.to_host();
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] != 1.0f + static_cast<float>(i);
  CHECK(wrong == 0);
  std::vector<Particle> records(2 * n);
  particles.copy_to(records);
  wrong = 0;
  for (auto const& p : records) wrong += p.mass != 2.0f;
  CHECK(wrong == 0);
  check_cuda(cudaFree(busy));
  check_cuda(cudaStreamDestroy(stream));
}

// A vector made on a stream is allocated, zeroed, grown and freed in that stream's order, so it
// can be made and dropped inside a CUDA graph capture: global capture mode refuses cudaMalloc
// and cudaFree (and any wait), so the capture below fails unless every step is stream ordered.
TEST_CASE("a vector made on a stream allocates, grows and frees on it, inside a CUDA graph capture too") {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t const n = 100'003;  // not a multiple of any block
  coalesce::device_vector<Particle, coalesce::aosoa<32>> result(n);
  auto out = result.view();
  coalesce::device_array<float> made_before(n);  // cudaMalloc'd, before the capture

  cudaGraph_t graph = nullptr;
  check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  {
    coalesce::device_vector<Particle> scratch(n / 2, stream);  // zeroed on the stream
    CHECK(scratch.allocation_stream() == coalesce::stream(stream));
    scratch.resize(n, Particle{{1, 2, 3}, {4, 5, 6}, 7.0f, 8}, stream);  // moves and fills on the stream
    // Without the stream the call would go to the default stream after waiting for the capturing
    // one, which a capture does not allow: refused with what to do, and the capture stays valid.
    CHECK_THROWS_WITH_AS(scratch.resize(n + 1), doctest::Contains("pass that stream"), coalesce::error);
    // Nor on another stream: the storage is the graph's until a launch.
    CHECK_THROWS_WITH_AS(scratch.reserve(2 * n, cudaStreamPerThread), doctest::Contains("pass that stream"),
                         coalesce::error);
    // An array made before the capture cannot grow inside it (its old memory cannot be freed there).
    CHECK_THROWS_WITH_AS(made_before.resize(4 * n, stream), doctest::Contains("cannot grow inside it"),
                         coalesce::error);
    auto in = scratch.view();
    coalesce::for_each_index(
        coalesce::device{}, n,
        [=] __device__(std::size_t i) {
          Particle p = in[i];
          p.id = static_cast<std::uint32_t>(i);
          out[i] = p;
        },
        stream);
  }  // freed on the stream
  cudaError_t const ended = cudaStreamEndCapture(stream, &graph);
  REQUIRE_MESSAGE(ended == cudaSuccess, "capture broken by a non-stream-ordered call: ", cudaGetErrorString(ended));
  cudaGraphExec_t exec = nullptr;
  check_cuda(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) check_cuda(cudaGraphLaunch(exec, stream));
  check_cuda(cudaStreamSynchronize(stream));
  std::vector<Particle> records(n);
  result.copy_to(records);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Particle const& p = records[i];
    bool const grown = i >= n / 2;
    wrong += p.pos.x != (grown ? 1.0f : 0.0f) || p.vel.z != (grown ? 6.0f : 0.0f) || p.mass != (grown ? 7.0f : 0.0f) ||
             p.id != i;
  }
  CHECK(wrong == 0);
  check_cuda(cudaGraphExecDestroy(exec));
  check_cuda(cudaGraphDestroy(graph));
  check_cuda(cudaStreamDestroy(stream));
}

// A device vector keeps only its allocation stream (the one rule, coalesce/memory/stream.hpp):
// made or converted on a stream it is allocated and freed there; a copy made without a stream is
// an ordinary cudaMalloc'd vector; work goes to the stream each call names, and a call without
// one (the default stream) first waits for the allocation stream, so it reads what was queued there.
TEST_CASE("a vector keeps only its allocation stream; each call's work goes to the stream it names") {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto const records = particles_in_box(5'001, 3);
  {  // the vectors made on the stream are freed on it, so they go before it does
    coalesce::device_vector<Particle> on_stream{std::span<Particle const>(records), stream};
    coalesce::device_vector<Particle, coalesce::aos> converted(on_stream, stream);
    check_cuda(cudaStreamSynchronize(stream));  // the conversion stays queued on the stream
    coalesce::device_vector<Particle, coalesce::aos> plain = converted;
    CHECK(on_stream.allocation_stream() == coalesce::stream(stream));
    CHECK(converted.allocation_stream() == coalesce::stream(stream));
    CHECK(plain.allocation_stream() == coalesce::default_stream);
    CHECK(same_records(records_of(plain), records));
    on_stream = {};  // freed on its stream
    CHECK(on_stream.allocation_stream() == coalesce::default_stream);

    // A sort hands the vector the plan's scratch: it keeps its allocation stream.
    coalesce::device_vector<Particle> sorted{std::span<Particle const>(records), stream};
    coalesce::reorder_plan plan(stream);
    for (int k = 0; k < 3; ++k) {
      coalesce::sort_by_key(sorted, coalesce::hilbert_keys(sorted, &Particle::pos, box16, plan), plan);
      CHECK(sorted.allocation_stream() == coalesce::stream(stream));
    }
    sorted.resize(records.size() + 100, Particle{{1, 1, 1}, {1, 1, 1}, 9.0f, 7}, stream);  // queued on it
    CHECK(sorted.allocation_stream() == coalesce::stream(stream));
    auto const grown = records_of(sorted);  // the default stream: waits for the allocation stream first
    std::size_t nines = 0;
    for (auto const& p : grown) nines += p.mass == 9.0f && p.id == 7;
    CHECK(nines == 100);

    // Made before a capture, it cannot grow inside it: a clear error, and the capture stays valid.
    cudaGraph_t graph = nullptr;
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK_THROWS_WITH_AS(sorted.reserve(10 * records.size(), stream),
                         doctest::Contains("reserve() the capacity before capturing"), coalesce::error);
    std::vector<Particle> sink(sorted.size());
    CHECK_THROWS_WITH_AS(sorted.copy_to(sink), doctest::Contains("pass that stream"), coalesce::error);
    check_cuda(cudaStreamEndCapture(stream, &graph));
    check_cuda(cudaGraphDestroy(graph));

    // Grown on the default stream (named), the default stream is its allocation stream from then on.
    sorted.reserve(4 * sorted.capacity(), coalesce::default_stream);  // past its capacity: a new allocation
    CHECK(sorted.allocation_stream() == coalesce::default_stream);
    sorted.resize(records.size() + 200, coalesce::default_stream);
    auto const regrown = records_of(sorted);
    std::size_t zeros = 0;
    for (auto const& p : regrown) zeros += p.mass == 0.0f && p.id == 0;
    CHECK(zeros == 100);
    CHECK(same_bytes(regrown[records.size()], grown[records.size()]));
  }
  check_cuda(cudaStreamDestroy(stream));
}

// A loop names its stream last; device{s} is the older spelling of the same, and naming two
// different streams is refused rather than one of them picked.
TEST_CASE("for_each_index takes its stream last, the default one by name too") {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t const n = 1'000;
  coalesce::device_array<float> values(n);
  float* f = values.data();
  coalesce::for_each_index(
      coalesce::device{}, n, [=] __device__(std::size_t i) { f[i] = 1.0f; }, stream);
  check_cuda(cudaStreamSynchronize(stream));
  coalesce::for_each_index(
      coalesce::device{}, n, [=] __device__(std::size_t i) { f[i] += 2.0f; }, coalesce::default_stream);
  coalesce::synchronize(coalesce::default_stream);
  coalesce::for_each_index(
      coalesce::device{stream}, n, [=] __device__(std::size_t i) { f[i] *= 2.0f; }, stream);
  // device{s} with the default stream named last (a wrapper forwarding its defaulted stream): on s.
  coalesce::for_each_index(
      coalesce::device{stream}, n, [=] __device__(std::size_t i) { f[i] += 0.0f; }, coalesce::default_stream);
  check_cuda(cudaStreamSynchronize(stream));
  auto const got = values.to_host();
  CHECK(std::count(got.begin(), got.end(), 6.0f) == static_cast<std::ptrdiff_t>(n));
  CHECK_THROWS_WITH_AS(
      coalesce::for_each_index(
          coalesce::device{stream}, n, [=] __device__(std::size_t i) { f[i] = 0.0f; }, cudaStreamPerThread),
      doctest::Contains("two different streams"), coalesce::error);
  check_cuda(cudaStreamDestroy(stream));
}

// Copies without a stream are ordered with the streams the data is written on: into a vector
// bound to a non-blocking stream from one written by a kernel still queued on the (busy)
// default stream; and a host vector downloaded on a stream is not bound to it.
TEST_CASE("a copy without a stream into a stream-bound vector waits for the source's writes") {
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::size_t const n = 1 << 20;
  std::size_t const busy_bytes = std::size_t{1} << 30;
  void* busy = nullptr;
  check_cuda(cudaMalloc(&busy, busy_bytes));
  {
    coalesce::device_vector<Particle> source(n);
    coalesce::device_vector<Particle> bound(n, stream);
    check_cuda(cudaStreamSynchronize(stream));
    for (int k = 0; k < 8; ++k) check_cuda(cudaMemsetAsync(busy, k, busy_bytes, nullptr));
    auto v = source.view();
    coalesce::for_each_index(coalesce::device{}, n, [=] __device__(std::size_t i) { v[i][&Particle::mass] = 3.0f; });
    bound = source;  // same size: no allocation, only the copy on the bound stream
    auto const got = records_of(bound);
    std::size_t wrong = 0;
    for (auto const& p : got) wrong += p.mass != 3.0f;
    CHECK(wrong == 0);
    coalesce::host_vector<Particle> downloaded(bound, stream);
    CHECK(downloaded.allocation_stream() == coalesce::default_stream);
    CHECK(bound.allocation_stream() == coalesce::stream(stream));
  }
  check_cuda(cudaFree(busy));
  check_cuda(cudaStreamDestroy(stream));
}
