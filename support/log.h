// The project's one logger: spdlog logger "magicube", level from MAGICUBE_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default warn; any other value is warned
// about once and the default kept). Never the default logger.
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace magicube {
spdlog::logger &log();

// Logs `message` as a warning the first time `key` is seen in this process; later calls
// with the same key log nothing. Returns whether it logged.
bool warn_once(const std::string &key, const std::string &message);
}  // namespace magicube
