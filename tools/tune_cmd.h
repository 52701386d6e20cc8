// `magicube tune`: times every candidate kernel of an op on one matrix, prints the table and
// the choice, and stores it (runtime/autotune.h). Free of llvm::cl (magicube.cpp fills the
// arguments).
#pragma once

#include "tools/commands.h"

namespace magicube::tool {

struct TuneArgs {
  RunArgs input;                  // the matrix and sizes, --repeat, --warmup, --seed, as for run
  bool bsn_given = false;         // --bsn pins the tile width (else 32, 64 and 128 are timed)
  bool no_prefetch_given = false; // --no-prefetch pins prefetch off (else ring depths 4, 3, 2 and off are timed)
  bool stages_given = false;      // --stages pins the ring depth
  bool split_given = false;       // --split pins the warp groups
  bool resident_given = false;    // --resident pins the resident-B kernel
  bool decode_given = false;      // --decode pins the decode kernel
  bool warps_given = false;       // --warps pins the decode kernel's warps a block (and the decode kernel)
  bool candidate_given = false;   // refused: tune times every candidate plan
  bool verify = false;            // check each candidate bit-exact before timing it
};

// Exit status: 0 tuned (the record is saved, or a warning says why not); 1 bad input, or no
// candidate could be timed; 2 no GPU (one line on stderr).
int cmd_tune(const OpFlags &f, const TuneArgs &args);

}  // namespace magicube::tool
