// (Session 28, not kept) The order of B's rows in a decode kernel's shared-memory slice, chosen
// for A's columns, so that each row-block's columns spread over the eight bank groups.
#pragma once
#include <cstdint>
#include <vector>
namespace magicube {
// A permutation of [0, k): set i's members (cols[first[i] .. first[i + 1])) get positions whose
// residues mod 8 are about equally common. Greedy (most-shared rows first, least-held residue with
// positions left), then two passes of pairwise swaps lowering the sets' sums of squared counts.
std::vector<uint16_t> slice_positions(int64_t k, const std::vector<int64_t> &first, const std::vector<int32_t> &cols);
}  // namespace magicube
