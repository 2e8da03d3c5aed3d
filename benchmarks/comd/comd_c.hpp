// comd_c.hpp - CoMD's C headers (the vendored original/src-openmp, built as comd_original) for the
// C++ files of the benchmark.
#pragma once
extern "C" {
#include "CoMDTypes.h"
#include "constants.h"
#include "decomposition.h"
#include "eam.h"
#include "initAtoms.h"
#include "linkCells.h"
#include "ljForce.h"
#include "memUtils.h"
#include "mycommand.h"
#include "parallel.h"
#include "timestep.h"
}
