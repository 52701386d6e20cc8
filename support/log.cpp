#include "support/log.h"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>

namespace magicube {

spdlog::logger &log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("magicube", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[%H:%M:%S.%e] [magicube] [%l] %v");
    spdlog::level::level_enum lvl = spdlog::level::warn;
    if (const char *env = std::getenv("MAGICUBE_LOG_LEVEL")) {
      auto parsed = spdlog::level::from_str(env);
      // from_str maps unknown names to "off"; only accept it when asked for.
      if (parsed != spdlog::level::off || std::string(env) == "off") lvl = parsed;
    }
    l->set_level(lvl);
    return l;
  }();
  return *logger;
}

}  // namespace magicube
