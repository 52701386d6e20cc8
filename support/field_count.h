// The number of fields of an aggregate, at compile time: the most initializers T{...} takes.
// Guards code that lists a struct's fields one by one (hashes, serializers), where a field
// added later must not be left out: a static_assert on the count fails at the new field, as a
// sizeof guard does not when the field fits the padding.
#pragma once

#include <cstddef>
#include <utility>

namespace magicube {

namespace detail {
// Converts to any field type (in an unevaluated context only).
struct AnyField {
  template <class T>
  constexpr operator T() const noexcept;
};
template <class T, std::size_t... I>
constexpr bool initializable_with(std::index_sequence<I...>) {
  return requires { T{(void(I), AnyField{})...}; };
}
}  // namespace detail

template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (detail::initializable_with<T>(std::make_index_sequence<N + 1>{})) return field_count<T, N + 1>();
  else return N;
}

}  // namespace magicube
