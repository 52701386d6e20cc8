#include "support/log.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>

#include <spdlog/sinks/stdout_color_sinks.h>

#include "support/text.h"

namespace magicube {

spdlog::logger &log() {
  static std::atomic<bool> bad_level{false};
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("magicube", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[%H:%M:%S.%e] [magicube] [%l] %v");
    spdlog::level::level_enum lvl = spdlog::level::warn;
    if (const char *env = std::getenv("MAGICUBE_LOG_LEVEL"); env && *env) {
      auto parsed = spdlog::level::from_str(env);
      // from_str maps unknown names to "off"; only accept it when asked for.
      if (parsed != spdlog::level::off || std::string(env) == "off") lvl = parsed;
      else bad_level = true;
    }
    l->set_level(lvl);
    return l;
  }();
  if (bad_level.load(std::memory_order_relaxed) && bad_level.exchange(false)) {
    // Once; warn_once below re-enters log(), which then skips this.
    warn_once("MAGICUBE_LOG_LEVEL", "MAGICUBE_LOG_LEVEL=" + quoted(std::getenv("MAGICUBE_LOG_LEVEL")) +
                                        " is not a level (allowed: trace, debug, info, warn, error, critical, off); "
                                        "using warn");
  }
  return *logger;
}

bool warn_once(const std::string &key, const std::string &message) {
  static std::mutex mu;
  static std::set<std::string> *seen = new std::set<std::string>();  // never destroyed
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!seen->insert(key).second) return false;
  }
  log().warn("{}", message);
  return true;
}

}  // namespace magicube
