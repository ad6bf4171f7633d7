#pragma once
// The process's log: spdlog's default logger, on stderr.
//
// setup_logging() installs it; set_log_flush_scheduler() lets a server batch
// its lines. Both replace process-wide state: call them from one thread,
// before (or after) the threads that log run.

#include <functional>
#include <string_view>

namespace cudagate {

// Installs the default spdlog logger, writing to stderr at `level` (trace,
// debug, info, warn, error, off). With `format` "json" every line is one JSON
// object {"time","level","msg"}; a message that is itself a JSON object has
// its fields merged into the line instead of a "msg" (structured log lines).
// Any other format is text, coloured when stderr is a terminal.
void setup_logging(std::string_view level, std::string_view format);

// Lets a server batch its log lines: `schedule` is called, with the logger's
// lock held, when a line is buffered into an empty buffer, and must arrange
// for spdlog::default_logger()->flush() to run soon, on another call stack
// (an asio::post). Warnings and errors are written at once regardless. An
// empty function writes what is buffered and returns to writing every line
// at once; set it before the scheduler's executor goes away.
void set_log_flush_scheduler(std::function<void()> schedule);

}  // namespace cudagate
