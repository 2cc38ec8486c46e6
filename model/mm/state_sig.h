// A simulated kernel's state at a round boundary, as plain words: what
// the steady-state check (sim/run/steady.h) compares between rounds of a
// measurement program. Each part of the model appends what decides its
// future behaviour: slab lists and freelists, sheaves and barns, memcg
// stocks and counters, the large objects, the rings' caches and tables.
//
// Ids are labels. Which slot of the slab table a slab has, which sheaf
// slot a sheaf, which id a large object or a page, which index in its
// slab an object: the model decides nothing by their values, only by
// which one is which. So a slab, sheaf or large object is written as the
// order in which the walk first meets it, an object as its slab's label
// and the order in which the walk first meets it within that slab, and
// two states that differ only by a renaming of ids write the same words.
// (Objects renamed matter: a cache that hands back the last object freed
// while a refill takes another reorders a slab's objects round by round,
// on a cycle far longer than the rounds' own.)
// Slab epochs and page ids are left out, as are cumulative statistics
// (event counters, SLUB stats, call-site counts, per-object histories
// and their sequence numbers), which only grow and decide nothing.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <iterator>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "model/mm/slab_ptr.h"
#include "model/types.h"

namespace simcache {

class StateSig {
  // An enum's integer type; an integer's own.
  template <class T, bool = std::is_enum_v<T>>
  struct Underlying {
    using type = T;
  };
  template <class T>
  struct Underlying<T, true> {
    using type = std::underlying_type_t<T>;
  };

 public:
  static constexpr uint64_t kNone = UINT64_MAX;
  static constexpr uint64_t kMaxSlot = uint64_t{1} << 24;
  // Words a streaming signature holds before handing them on.
  static constexpr size_t kChunk = 4096;
  using Sink = void (*)(void* ctx, const uint64_t* words, size_t n);

  StateSig() = default;
  // Not copied: a copy of a streaming signature would feed its sink too.
  StateSig(const StateSig&) = delete;
  StateSig& operator=(const StateSig&) = delete;
  // A moved-from signature is empty.
  StateSig(StateSig&& o) noexcept { *this = std::move(o); }
  StateSig& operator=(StateSig&& o) noexcept {
    words_ = std::move(o.words_);
    n_ = std::exchange(o.n_, 0);
    sink_ = std::exchange(o.sink_, nullptr);
    ctx_ = std::exchange(o.ctx_, nullptr);
    slab_ = std::move(o.slab_), sheaf_ = std::move(o.sheaf_), large_ = std::move(o.large_);
    slab_order_ = std::move(o.slab_order_), sheaf_order_ = std::move(o.sheaf_order_);
    large_order_ = std::move(o.large_order_);
    objects_ = std::move(o.objects_), by_label_ = std::move(o.by_label_);
    o.clear();
    return *this;
  }

  // Streaming: the words go to `sink` in chunks of kChunk (and the rest
  // at flush()) instead of being kept, so a signature as big as the model
  // costs a chunk of memory, not its size. words() and == then see only
  // what is not handed on yet.
  void stream_to(Sink sink, void* ctx);
  void flush();
  // The walk's inner step: a store and a compare (the model's signature
  // is tens of thousands of words, taken after every round a check
  // watches).
  void add(uint64_t v) {
    if (n_ == words_.size()) [[unlikely]] make_room();
    words_[n_++] = v;
  }
  // A slab slot's label (-1: none), handing out the next on first sight.
  uint64_t slab(int32_t id) { return id < 0 ? kNone : label(&slab_, &slab_order_, id); }
  uint64_t sheaf(int32_t id) { return id < 0 ? kNone : label(&sheaf_, &sheaf_order_, id); }
  uint64_t large(uint64_t id) { return label(&large_, &large_order_, id); }
  // A pointer: a slab object as its slab's label and its index, a large
  // or vmalloc area as its flag and label.
  void ptr(Ptr p) {
    using namespace slub_ptr;
    constexpr Ptr kBits = kLargeBit | kVmallocBit;
    if (p == kNull) return add(kNone);
    if (p & kBits) return add((p & kBits) | large(p & ~kBits));
    const uint64_t slot = (p >> kIdxBits) & kSlotMask;
    // No slab table reaches this many slots: a pointer that says so is
    // written as it is rather than grow the label table.
    if (slot >= kMaxSlot) return add(p);
    const uint64_t l = slab(static_cast<int32_t>(slot));
    add((l << kIdxBits) | object(l, static_cast<uint16_t>(p & kIdxMask)));
  }
  // An object's label within the slab labelled `slab_label`, handing out
  // the next on first sight.
  uint64_t object(uint64_t slab_label, uint16_t idx) {
    if (slab_label >= objects_.size()) objects_.resize(slab_label + 1);
    Objects& o = objects_[slab_label];
    if (idx >= o.label.size()) o.label.resize(idx + 1, 0);
    uint16_t& l = o.label[idx];
    if (l == 0) l = ++o.met;
    return l - 1;
  }
  // A slab's object indices by label, all `n` of them, the objects not
  // met yet taking the next labels by index. The walk writes each
  // per-object vector in this order. Empty when a pointer met earlier
  // named an index at or past `n` (then no order covers the labels).
  std::span<const uint16_t> objects_by_label(uint64_t slab_label, uint16_t n);
  // The labels of a sequence of object indices in the slab labelled
  // `slab_label`: its length, then each label.
  template <class R>
  void objects(uint64_t slab_label, const R& idx) {
    add(static_cast<uint64_t>(std::size(idx)));
    for (uint16_t i : idx) add(object(slab_label, i));
  }
  // A sequence: its length, then each element; elements narrower than a
  // word are packed, as many to a word as fit (a slab's per-object
  // bytes), which keeps the words one-to-one with the sequences.
  template <class R>
  void all(const R& r) {
    using T = std::remove_cvref_t<decltype(*std::begin(r))>;
    add(static_cast<uint64_t>(std::size(r)));
    if constexpr (sizeof(T) < sizeof(uint64_t) && !std::is_same_v<T, bool> &&
                  (std::is_integral_v<T> || std::is_enum_v<T>)) {
      using U = std::make_unsigned_t<typename Underlying<T>::type>;
      constexpr unsigned kBits = 8 * sizeof(T), kPer = sizeof(uint64_t) / sizeof(T);
      uint64_t w = 0;
      unsigned k = 0;
      for (const T& x : r) {
        w |= static_cast<uint64_t>(static_cast<U>(x)) << (kBits * k);
        if (++k == kPer) add(w), w = 0, k = 0;
      }
      if (k) add(w);
    } else {
      for (const auto& x : r) add(static_cast<uint64_t>(x));
    }
  }
  // all() of v's elements in the order `order` names them (a slab's
  // per-object vectors by object label).
  template <class T>
  void all_by(std::span<const uint16_t> order, const std::vector<T>& v) {
    all(Permuted<T>{order, v.data()});
  }
  template <class R>
  void ptrs(const R& r) {
    add(static_cast<uint64_t>(std::size(r)));
    for (Ptr p : r) ptr(p);
  }
  // The ids met so far, by label (a walk writes each one's contents).
  const std::vector<uint64_t>& slab_order() const { return slab_order_; }
  const std::vector<uint64_t>& sheaf_order() const { return sheaf_order_; }
  const std::vector<uint64_t>& large_order() const { return large_order_; }
  bool has_slab(int32_t id) const {
    return static_cast<size_t>(id) < slab_.size() && slab_[static_cast<size_t>(id)] != 0;
  }
  bool has_large(uint64_t id) const { return id < large_.size() && large_[id] != 0; }

  void clear() {
    n_ = 0;
    for (Objects& o : objects_) {
      o.label.clear();
      o.met = 0;
    }
    for (auto* v : {&slab_, &sheaf_, &large_}) v->clear();
    for (auto* v : {&slab_order_, &sheaf_order_, &large_order_}) v->clear();
  }
  std::span<const uint64_t> words() const { return {words_.data(), n_}; }
  // Kept signatures only: a streamed one has handed its words on.
  bool operator==(const StateSig& o) const {
    assert(!sink_ && !o.sink_);
    return std::ranges::equal(words(), o.words());
  }

 private:
  // v's elements in the order of a list of indices, as a range all()
  // walks.
  template <class T>
  struct Permuted {
    std::span<const uint16_t> order;
    const T* v;
    struct Iter {
      const uint16_t* i;
      const T* v;
      T operator*() const { return v[*i]; }
      Iter& operator++() { return ++i, *this; }
      bool operator!=(const Iter& o) const { return i != o.i; }
    };
    Iter begin() const { return {order.data(), v}; }
    Iter end() const { return {order.data() + order.size(), v}; }
    size_t size() const { return order.size(); }
  };
  // labels[id] is the label + 1 (0: not met yet).
  static uint64_t label(std::vector<uint64_t>* labels, std::vector<uint64_t>* order, uint64_t id) {
    if (id >= labels->size()) labels->resize(id + 1, 0);
    uint64_t& l = (*labels)[id];
    if (l == 0) {
      order->push_back(id);
      l = order->size();
    }
    return l - 1;
  }
  // A streaming buffer, at most kChunk words, goes to the sink when full;
  // a kept one doubles. Out of line: add() stays a store and a compare
  // wherever it is inlined.
  void make_room();
  std::vector<uint64_t> words_;  // the first n_ are the signature's
  size_t n_ = 0;
  Sink sink_ = nullptr;
  void* ctx_ = nullptr;
  std::vector<uint64_t> slab_, sheaf_, large_;
  std::vector<uint64_t> slab_order_, sheaf_order_, large_order_;
  // Per slab label: each object index's label + 1 (0: not met yet), the
  // labels handed out, and the indices by label (objects_by_label()).
  struct Objects {
    std::vector<uint16_t> label;
    uint16_t met = 0;
  };
  std::vector<Objects> objects_;
  std::vector<uint16_t> by_label_;
};

}  // namespace simcache
