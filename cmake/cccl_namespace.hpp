// Force-included (-include) into libcoalesce's own sources, which are built with
// THRUST_CUB_WRAPPED_NAMESPACE=coalesce_cccl (as cub/util_namespace.cuh recommends for
// libraries): the Thrust and CUB compiled into libcoalesce.a then live in coalesce_cccl::, so they
// cannot collide with the Thrust and CUB of a program (another version, other architectures)
// at link time. This using-directive lets src/ keep writing thrust:: and cub::.
#pragma once
namespace coalesce_cccl {}
using namespace coalesce_cccl;
