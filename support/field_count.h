// The number of fields of an aggregate, at compile time: the most initializers T{...} takes.
// Guards code that lists a struct's fields one by one (hashes, serializers), where a field
// added later must not be left out: a static_assert on the count fails at the new field, as a
// sizeof guard does not when the field fits the padding.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace magicube {

namespace detail {
// Converts to any field type (in an unevaluated context only).
struct AnyField {
  template <class T>
  constexpr operator T() const noexcept;
};
// Whether T{x_0, ..., x_{n-1}} compiles, one AnyField per index (C++17: the fuzz build's).
template <class T, class Seq, class = void>
struct InitializableWith : std::false_type {};
template <class T, std::size_t... I>
struct InitializableWith<T, std::index_sequence<I...>, std::void_t<decltype(T{(void(I), AnyField{})...})>>
    : std::true_type {};
}  // namespace detail

template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (detail::InitializableWith<T, std::make_index_sequence<N + 1>>::value) return field_count<T, N + 1>();
  else return N;
}

}  // namespace magicube
