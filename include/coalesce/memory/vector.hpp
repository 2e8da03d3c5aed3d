// coalesce/memory/vector.hpp - the owning container.
//
//   coalesce::host_vector<Particle> h(n);                        // soa on the host, zero-filled
//   coalesce::device_vector<Particle> d = h;                     // upload
//   coalesce::device_vector<Particle, coalesce::aos> a = d;      // layout change on the GPU
//   coalesce::host_vector<Particle> in(legacy);                  // AoS records in (any contiguous range)
//   d.copy_to(std::span<Particle>(legacy_out));                  // and back out, as records
//   h.push_back(p);  h.resize(m);  h.reserve(c);  h.clear();     // as std::vector (host only)
//   auto v = d.view();                                           // for kernels, by value
//   coalesce::device_vector<Particle> t(n, s);                   // allocated and zeroed on stream s
//   t.resize(2 * n, s);  t.copy_to(std::span<Particle>(legacy_out), s);   // work on s: the stream last
//   // (with a value instead of a stream: t(n, Particle{}); t(n, {}) is ambiguous)
//
// One allocation per vector (columns of a soa vector are carved from it, each on a 256-byte
// boundary). Streams follow the one rule of coalesce/memory/stream.hpp: every call here that runs
// work (constructors, assign, copy_to, resize, reserve, shrink_to_fit) takes a stream as its last
// argument, coalesce::default_stream when left out. A device vector keeps one stream, its
// allocation stream (allocation_stream()): where its storage was last allocated (cudaMallocAsync
// on a stream of yours: no device-wide wait, allowed in a CUDA graph capture there) and where it
// is freed; no other work goes there by itself, as with rmm's device_uvector. A call on the
// default stream first waits for the allocation stream (so a vector made on a non-blocking stream
// is safe to use without one) and, for copies and fills, is done when it returns; a call on a
// stream of yours is queued there and returns, and ordering it with the allocation stream and
// with other streams is yours, as for any cudaMallocAsync memory (an event, cudaStreamSynchronize).
// A vector made before a graph capture cannot grow, be reassigned larger or be destroyed inside
// it (reserve first). Copies, conversions and fills go through libcoalesce (type-erased
// kernels), so a plain .cpp file can hold device vectors; only the kernels a user writes need nvcc.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "buffer.hpp"
#include "transfer.hpp"
#include "../core/box.hpp"
#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/reflect.hpp"
#include "space.hpp"
#include "../core/view.hpp"
#include "../core/layout_storage.hpp"

namespace coalesce {

// The owning container: elements of type T stored in Layout (soa, aos, aosoa<N>, ...) in host or
// device memory (Space), one allocation each; see the file comment for streams.
template <class T, class Layout = soa, class Space = host> class vector;
template <class V> struct is_vector : std::false_type {};
template <class T, class L, class S> struct is_vector<vector<T, L, S>> : std::true_type {};

template <class T, class Layout, class Space> class vector {
  static_assert(!std::is_const_v<T>, "coalesce: vector<T const> is not allowed; use a const vector or view<T const>");
  static_assert(space<Space>, "coalesce: the space must be coalesce::host or coalesce::device");
  static constexpr detail::memory_kind kind = detail::kind_of_space<Space>;
  using storage_type = layout_storage<T, Layout>;

 public:
  using value_type = T;                                         // the element (record) type
  using layout_type = Layout;                                   // soa, aos, aosoa<N>, ...
  using space_type = Space;                                     // coalesce::host or coalesce::device
  using size_type = std::size_t;                                // element counts and indices
  using view_type = coalesce::view<T, Layout>;                  // the non-owning handle view() returns
  using const_view_type = coalesce::view<T const, Layout>;      // the read-only handle
  using reference = typename view_type::reference;              // a proxy to one element, not a T&
  using const_reference = typename const_view_type::reference;  // a read-only proxy
  using iterator = typename view_type::iterator;                // random access; dereferences to a proxy
  using const_iterator = typename const_view_type::iterator;    // the same, read-only

  vector() = default;

  // An empty vector whose box_fixed members (core/stored_types.hpp) are relative to `b`.
  explicit vector(box const& b) requires(storage_type::boxed) : vector() { set_box(b); }
  // The box that box_fixed members are stored relative to. On a vector that holds elements the
  // stored fractions stay: every coordinate moves with the box (an affine rescale, as a barostat
  // does). To keep the coordinates and store them in another box instead, copy into a vector made
  // with that box: vector<T, L> w(other_box); w.assign(v).
  void set_box(box const& b) requires(storage_type::boxed) { box_ = detail::frame_of(b, "set_box"); }
  // The box that box_fixed members are stored relative to (empty until set).
  box get_box() const requires(storage_type::boxed) {
    box b;
    for (int a = 0; a < 3; ++a) b.lo[a] = box_.origin[a], b.hi[a] = box_.end[a];
    return b;
  }

  // n value-initialized (zero) elements.
  explicit vector(std::size_t n) : vector(n, default_stream) {}
  // The same allocated and zeroed on stream `on`; returns without waiting (work on `on` sees the
  // zeros). On the default stream it is done when it returns.
  vector(std::size_t n, stream on) : vector() {
    reallocate_empty(n, on);
    detail::zero_bytes(kind, memory_.data(), memory_.size(), on.handle());
    gaps_ready_ = capacity_;
    size_ = n;
  }
  // n copies of `value`, filled on `on` (done on return on the default stream). Throws
  // coalesce::error if a member stored in another format (stored_as) cannot hold value's.
  vector(std::size_t n, T const& value, stream on = default_stream) : vector() {
    reallocate_empty(n, on);
    expose(n, on);
    detail::fill_elements(storage(), kind, value, 0, n, on.handle());
    size_ = n;
  }
  // From AoS records in host memory (a legacy array, a std::vector<T>). Copies on `on`, and
  // returns when the records have been read (the host may reuse them).
  explicit vector(std::span<T const> records, stream on = default_stream) : vector() {
    reallocate_empty(records.size(), on);
    expose(records.size(), on);
    auto const source = coalesce::view<T const, aos>(records);
    detail::copy_elements(storage(), kind, source.storage(), detail::memory_kind::host, records.size(), on.handle());
    size_ = records.size();
  }
  // From any contiguous host range of records: host_vector<Particle> h(legacy_std_vector);
  template <class R>
  requires(!is_vector<std::remove_cvref_t<R>>::value) &&
      std::ranges::contiguous_range<R const>&& std::same_as<std::ranges::range_value_t<R>, T> &&
      (!std::same_as<std::remove_cvref_t<R>, std::span<T const>>)explicit vector(R const& records)
      : vector(std::span<T const>(std::ranges::data(records), std::ranges::size(records))) {}
  // A copy on the default stream, box included; done when it returns.
  vector(vector const& other) : vector() { assign_from(other); }
  // Takes over other's allocation (no copy, no stream work); other is left empty.
  vector(vector&& other) noexcept { swap(other); }
  // Between layouts and spaces: device_vector<T> d = h; device_vector<T, aos> a = d;
  template <class L2, class S2> vector(vector<T, L2, S2> const& other) : vector() { assign_from(other); }
  // The same on a stream: device_vector<T> d(h, s). Waits only when host memory is written
  // (a copy into a host vector); GPU-to-GPU conversions stay queued on s.
  template <class L2, class S2> vector(vector<T, L2, S2> const& other, stream on) : vector() { assign_from(other, on); }

  // Replaces the contents with other's elements (any layout, any space), copied on `on`.
  template <class L2, class S2> void assign(vector<T, L2, S2> const& other, stream on = default_stream) {
    if (static_cast<void const*>(&other) != static_cast<void const*>(this)) assign_from(other, on, false);
  }

  // A copy: box_fixed members' box included (assign() instead keeps this vector's box, if it has
  // one, and converts the coordinates into it).
  vector& operator=(vector const& other) {
    if (this != &other) assign_from(other, default_stream, true);
    return *this;
  }
  // Takes over other's allocation (no copy); other is left empty, this vector's old storage freed.
  vector& operator=(vector&& other) noexcept {
    vector(std::move(other)).swap(*this);
    return *this;
  }
  // A copy from another layout or space on the default stream, box included (assign() keeps
  // this vector's box); done when it returns.
  template <class L2, class S2> vector& operator=(vector<T, L2, S2> const& other) {
    assign_from(other, default_stream, true);
    return *this;
  }

  std::size_t size() const { return size_; }  // elements held (not the capacity)
  bool empty() const { return size_ == 0; }   // no elements held
  // A value that changes whenever the library permutes the elements (sort_by_key, apply,
  // coalesce::mpi's migrate, erase): 0 for a vector made or filled from records and never
  // permuted since; a copy (or an assignment) has its source's. What a neighbour list remembers of
  // the order it was built for (verlet_list::view(v)). Writes through a view (a permutation by
  // hand) and records in another order copied in are not seen.
  std::uint64_t order_stamp() const { return order_; }
  std::size_t capacity() const { return capacity_; }  // elements the allocation has room for
  // The most elements this layout can address without its byte count overflowing.
  static constexpr std::size_t max_size() { return storage_type::max_capacity(); }
  // Bytes of the one allocation behind the vector (columns padded to 256 bytes).
  std::size_t allocated_bytes() const { return memory_.size(); }

  // Room for new_capacity elements without reallocating (it never shrinks): a larger capacity
  // moves the elements to a new allocation on `on`, which becomes the allocation stream.
  void reserve(std::size_t new_capacity, stream on = default_stream) {
    wait_for_allocation_stream(on);
    if (new_capacity > capacity_) move_to_capacity(new_capacity, on);
  }
  // Moves the elements to an allocation of exactly size() on `on` (the new allocation stream).
  void shrink_to_fit(stream on = default_stream) {
    wait_for_allocation_stream(on);
    if (capacity_ > size_) move_to_capacity(size_, on);
  }
  // New elements get `value` (T{}). On the default stream the fill is done when this returns, so
  // work on any stream of the caller's sees it; on a stream of yours the move (when it grows) and
  // the fill are queued there and it returns without waiting.
  void resize(std::size_t n, stream on = default_stream) { resize(n, T{}, on); }
  void resize(std::size_t n, T const& value, stream on = default_stream) {
    std::size_t const old_size = size_;
    resize_for_overwrite(n, on);
    if (n <= old_size) return;
    try {
      detail::fill_elements(storage(), kind, value, old_size, n - old_size, on.handle());
    } catch (...) {  // a value the layout refuses: no element was written, none is added
      size_ = old_size;
      throw;
    }
  }
  // resize without the fill: elements past the old size hold unspecified values until written (the
  // padding inside their records is zeroed as by resize). For code that writes every new element
  // next, such as a migration's unpack of its arrivals, which would otherwise write them twice.
  void resize_for_overwrite(std::size_t n, stream on = default_stream) {
    wait_for_allocation_stream(on);
    if (n > capacity_) move_to_capacity(std::max(n, grown_capacity()), on);
    expose(n, on);
    size_ = n;
  }
  // Where the storage was last allocated and where it will be freed (the default stream for
  // host vectors and for device vectors never allocated on a stream of yours).
  stream allocation_stream() const { return allocation_stream_; }
  void clear() noexcept { size_ = 0; }  // size 0; the capacity (and the allocation) stays

  // Appends value, growing the capacity (doubled, at least 8) when full. Host vectors only: on a
  // device_vector it does not compile.
  void push_back(T const& value) {
    static_assert(std::is_same_v<Space, host>,
                  "coalesce: push_back on a device_vector would write GPU memory from the host one element "
                  "at a time; fill a host_vector and copy it (device_vector<T> d = h), or resize and fill "
                  "in a kernel");
    if (size_ == capacity_) move_to_capacity(grown_capacity(), default_stream);
    expose(size_ + 1, default_stream);
    ++size_;
    view()[size_ - 1] = value;
  }
  // Drops the last element; throws coalesce::error on an empty vector.
  void pop_back() {
    if (size_ == 0) detail::throw_error("pop_back on an empty vector");
    --size_;
  }

  // Exchanges the allocations (no copy, no stream work), allocation streams and boxes included.
  void swap(vector& other) noexcept {
    memory_.swap(other.memory_);
    std::swap(allocation_stream_, other.allocation_stream_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(gaps_ready_, other.gaps_ready_);
    std::swap(order_, other.order_);
    std::swap(box_, other.box_);
  }
  friend void swap(vector& a, vector& b) noexcept {
    a.swap(b);
  }  // a.swap(b), found by ADL (using std::swap; swap(a, b))

  // To AoS records in host memory; `out` must hold exactly size() records. Copies on `on` and
  // returns when the records have arrived.
  void copy_to(std::span<T> out, stream on = default_stream) const {
    if (out.size() != size_) {
      detail::throw_error("copy_to needs a span of exactly size() = " + std::to_string(size_) + " records, got " +
                          std::to_string(out.size()) + "; resize the destination first");
    }
    wait_for_allocation_stream(on);
    auto const target = coalesce::view<T, aos>(out);
    detail::copy_elements(target.storage(), detail::memory_kind::host, storage(), kind, size_, on.handle());
  }

  // The non-owning handle kernels and host loops index (pass it by value); valid until the vector
  // reallocates. Throws coalesce::error for a box_fixed layout that holds elements and has no box.
  view_type view() {
    check_box_for_view();
    return view_type(storage(), size_);
  }
  // The same, read-only.
  const_view_type view() const {
    check_box_for_view();
    return const_view_type(storage(), size_);
  }
  const_view_type const_view() const { return view(); }  // view() read-only, from a non-const vector too

  // Element access and iteration from host code: host vectors only (a device_vector is not a
  // host range; use view() inside a kernel, or copy to a host_vector). operator[] checks bounds
  // when COALESCE_CHECK_BOUNDS is on; at() always does.
  reference operator[](std::size_t i) {
    static_assert_host_access<Space>();
    return view()[i];
  }
  // The same, read-only.
  const_reference operator[](std::size_t i) const {
    static_assert_host_access<Space>();
    return view()[i];
  }
  // Element i, bounds checked always: throws coalesce::error when i >= size(). Host vectors only.
  reference at(std::size_t i) {
    static_assert_host_access<Space>();
    if (i >= size_) detail::throw_out_of_range(i, size_);
    return view()[i];
  }
  // The same, read-only.
  const_reference at(std::size_t i) const {
    static_assert_host_access<Space>();
    if (i >= size_) detail::throw_out_of_range(i, size_);
    return view()[i];
  }
  reference front() { return at(0); }                                          // throws when empty, as at()
  const_reference front() const { return at(0); }                              // the same, read-only
  reference back() { return size_ == 0 ? at(0) : at(size_ - 1); }              // throws when empty, as at()
  const_reference back() const { return size_ == 0 ? at(0) : at(size_ - 1); }  // the same, read-only

  // Removes elements [first, last) (indices), moving the later ones down, as std::vector::erase.
  // Host vectors only; returns the index of the element after the removed ones.
  std::size_t erase(std::size_t first, std::size_t last) {
    static_assert_host_access<Space>();
    if (first > last || last > size_) {
      detail::throw_error("erase: the range [" + std::to_string(first) + ", " + std::to_string(last) +
                          ") is not inside [0, size() = " + std::to_string(size_) + ")");
    }
    auto v = view();
    for (std::size_t i = first; i + (last - first) < size_; ++i) v[i] = T(v[i + (last - first)]);
    order_ = detail::next_order_stamp();  // the elements after `first` moved
    size_ -= last - first;
    return first;
  }
  std::size_t erase(std::size_t i) { return erase(i, i + 1); }                      // removes element i only
  iterator begin() requires std::is_same_v<Space, host> { return view().begin(); }  // host vectors only
  iterator end() requires std::is_same_v<Space, host> { return view().end(); }      // host vectors only
  const_iterator begin() const requires std::is_same_v<Space, host> { return view().begin(); }  // host only
  const_iterator end() const requires std::is_same_v<Space, host> { return view().end(); }      // host only

  // The layout's pointers, for code that drives columns itself (copies, reorders).
  storage_type storage() const {
    storage_type s = storage_type::over(memory_.data(), capacity_);
    detail::set_frame(s, box_);
    return s;
  }

  // For algorithms that rebuild every element out of place (coalesce::sort_by_key): takes over
  // `other`, an allocation of the same kind and allocated_bytes(), laid out for capacity()
  // elements of which size() are valid, and hands the old allocation back in `other` so that
  // the caller can reuse it next time (no copy back, no allocation).
  void adopt_buffer(detail::buffer& other) {
    if (other.size() != memory_.size() || (other.size() != 0 && other.kind() != kind)) {
      detail::throw_error(
          "adopt_buffer: the buffer has " + std::to_string(other.size()) +
          " bytes of another kind or size; it must match allocated_bytes() = " + std::to_string(memory_.size()));
    }
    memory_.swap(other);
    memory_.free_on(allocation_stream_.handle());  // freed where the vector frees its storage
    gaps_ready_ = size_;  // the elements were written; what lies past them is zeroed as they come into use
    order_ = detail::next_order_stamp();  // the elements were rebuilt in another order
  }
  // For algorithms that move elements in place (coalesce::mpi's migrate, a halo's ghosts): the
  // elements are in another order now; order_stamp() changes.
  void mark_reordered() noexcept { order_ = detail::next_order_stamp(); }

 private:
  template <class, class, class> friend class vector;

  template <class S> static constexpr void static_assert_host_access() {
    static_assert(std::is_same_v<S, host>,
                  "coalesce: a device_vector's elements live in GPU memory, so host code cannot index them; "
                  "inside a kernel use auto v = d.view(); ... v[i] (for_each_index), or copy to a host_vector "
                  "(host_vector<T> h = d;) and index that");
  }

  std::size_t grown_capacity() const {
    return capacity_ > max_size() / 2 ? max_size() : std::max<std::size_t>(2 * capacity_, 8);
  }
  static void check_capacity(std::size_t n) {
    if (n > max_size()) {
      detail::throw_error("a vector of " + std::to_string(n) +
                          " elements is larger than max_size() = " + std::to_string(max_size()) +
                          " for this element type and layout (its size in bytes would "
                          "overflow); ask for fewer elements");
    }
  }

  // Fresh, uninitialized storage for exactly `n` elements, allocated on `on` (the vector's
  // allocation stream from now on); old contents are dropped.
  void reallocate_empty(std::size_t n, stream on = default_stream) {
    check_capacity(n);
    check_not_freeing_inside_capture(on);
    memory_.free_on(on.handle());  // after the work the caller queued on `on`, which may read it
    memory_ = detail::buffer(kind, storage_type::bytes(n), on.handle());
    allocation_stream_ =
        kind == detail::memory_kind::device ? on : default_stream;  // host memory has no stream to keep
    capacity_ = n;
    size_ = 0;
    // Padding inside records: zeroed once per allocation, or as elements come into use (expose).
    detail::zero_gaps(storage(), kind, on.handle(), true);
    gaps_ready_ = 0;
  }

  // Elements [0, n) are about to be written or copied: the gaps of their records and blocks are
  // zeroed first where the allocation left that to this moment (aos, aosoa blobs:
  // detail::gaps_in_element_order). Storage beyond the elements in use is never touched, so a
  // vector grown to twice its capacity (resize, push_back, migrate) pays for the pages it uses.
  void expose(std::size_t n, stream on) {
    if (n <= gaps_ready_) return;
    detail::zero_gaps_of(storage(), kind, gaps_ready_, n, on.handle());
    gaps_ready_ = n;
  }

  // The rule's waits and capture checks, shared with coalesce::array (memory/buffer.hpp).
  void wait_for_allocation_stream(stream on) const {
    detail::wait_for_allocation_stream(allocation_stream_, on, "a vector",
                                       "resize(n, s), reserve(n, s), copy_to(out, s), assign(v, s)");
  }
  void check_not_freeing_inside_capture(stream on) const {
    detail::check_not_freeing_inside_capture(
        memory_, allocation_stream_, on, "a vector",
        "reserve() the capacity before capturing, or make the vector inside the capture");
  }

  // Moves the elements to new storage allocated on `on`, which becomes the allocation stream; the
  // old storage is freed on `on` after the copy that reads it (queued there; on the default
  // stream, done on return).
  void move_to_capacity(std::size_t new_capacity, stream on) {
    check_capacity(new_capacity);
    check_not_freeing_inside_capture(on);
    detail::buffer fresh(kind, storage_type::bytes(new_capacity), on.handle());
    auto target = storage_type::over(fresh.data(), new_capacity);
    detail::set_frame(target, box_);
    // Where every element keeps its place (aos, aosoa: the same bytes at any capacity), each
    // blob's used bytes copy as one range, gaps included; the gaps past them are zeroed as
    // elements come into use. Otherwise (soa: columns start at capacity-dependent offsets) the
    // gaps are zeroed now and the elements copied column by column.
    bool const in_place = detail::same_placement(target, storage());
    detail::zero_gaps(target, kind, on.handle(), in_place);
    detail::copy_elements(target, kind, storage(), kind, size_, on.handle());
    if (in_place) detail::zero_gaps_of(target, kind, size_, size_, on.handle());  // the last block's rest
    memory_.free_on(on.handle());
    memory_ = std::move(fresh);
    allocation_stream_ = kind == detail::memory_kind::device ? on : default_stream;
    capacity_ = new_capacity;
    gaps_ready_ = in_place ? size_ : capacity_;
  }

  // On `on`. On the default stream it first waits for both vectors' allocation streams (the
  // source's elements may still be written there) and is done when it returns.
  // take_box: this vector becomes a copy of other, box included (operator=, copy construction);
  // else (assign) a vector without a box takes other's, one with a box keeps it. Between boxed
  // layouts only; a refused copy leaves the box as it was.
  template <class L2, class S2>
  void assign_from(vector<T, L2, S2> const& other, stream on = default_stream, bool take_box = true) {
    auto const box_before = box_;
    if constexpr (storage_type::boxed && layout_storage<T, L2>::boxed) {
      if (take_box || !box_.given()) box_ = other.box_;
    }
    try {
      wait_for_allocation_stream(on);
      other.wait_for_allocation_stream(on);
      if (capacity_ < other.size_) reallocate_empty(other.size_, on);
      expose(other.size_, on);
      detail::copy_elements(storage(), kind, other.storage(), vector<T, L2, S2>::kind, other.size_, on.handle());
    } catch (...) {
      box_ = box_before;
      throw;
    }
    size_ = other.size_;
    order_ = other.order_;
  }

  detail::buffer memory_;
  stream allocation_stream_{};
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::size_t gaps_ready_ = 0;               // the gaps of elements [0, gaps_ready_) are written (expose)
  std::uint64_t order_ = 0;                  // 0: not permuted by the library since it was made or filled
  typename storage_type::frame_type box_{};  // box_fixed members' box (empty for other layouts)

  // A view of a vector with box_fixed members and no box would read every coordinate as 0.
  void check_box_for_view() const {
    if (size_ > 0 && !box_.given()) {
      detail::throw_error(
          "view() of a vector whose layout stores members as box_fixed, which has no box; "
          "give it one first (vector<T, L> v(box); v.set_box(box))");
    }
  }
};

// A vector in host memory (indexable and iterable from host code).
template <class T, class Layout = soa> using host_vector = vector<T, Layout, host>;
// A vector in GPU memory (host code reaches its elements through copies; kernels through view()).
template <class T, class Layout = soa> using device_vector = vector<T, Layout, device>;

}  // namespace coalesce
