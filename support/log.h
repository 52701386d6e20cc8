// The project's one logger: spdlog logger "magicube", level from MAGICUBE_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default warn). Never the default logger.
#pragma once

#include <spdlog/spdlog.h>

namespace magicube {
spdlog::logger &log();
}  // namespace magicube
