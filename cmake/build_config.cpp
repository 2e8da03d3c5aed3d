// Compiled into libcoalesce.a only: defines the symbol named after this build's configuration
// (version and COALESCE_WITH_CUDA) that config.hpp makes every user translation unit refer to.
// Headers configured one way and a library built another then fail to link, naming the
// configuration each expects, instead of disagreeing silently at run time.
#include <coalesce/core/config.hpp>

namespace coalesce::detail {
int const COALESCE_DETAIL_LINK_CHECK = 1;
}  // namespace coalesce::detail
