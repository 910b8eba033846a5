#include <filesystem>
#include <ostream>
#include <string_view>
#include <utility>

#include "run_commands.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"
#include "shardscope/trace/summary.hpp"
#include "trace_tools.hpp"

namespace shardscope::app {

int RunShow(const ShowArgs& args, std::ostream& out) {
  trace::Model model = LoadTrace(args.path, args.jobs, !args.json);
  // Written piece by piece as the pieces are made: the output of a large trace (hundreds of
  // megabytes) is never held whole.
  auto write = [&out](std::string_view piece) {
    out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
  };
  if (args.json) {
    trace::WriteShowJson(model, write);
    out << "\n";
  } else {
    trace::WriteShowText(model, write);
  }
  KeepUntilExit(std::move(model));
  return 0;
}

}  // namespace shardscope::app
