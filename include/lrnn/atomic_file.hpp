// Saving a file so that readers only ever see the old content or the new one, whole.
// Shared by every writer of user files (models, RASP outputs, converted data sets).
#pragma once

#include <string>
#include <string_view>

namespace lrnn {

// Writes `content` to `path`: the data goes to an unnamed temporary file in the target's
// directory (O_TMPFILE; a uniquely named one where the file system lacks it), is flushed to
// disk, then renamed over the target. So a full disk or a crash leaves the old file intact
// and, with O_TMPFILE, no temporary file behind even when the process is killed.
// A symbolic link is followed (its target is replaced, the link stays); an existing file
// keeps its permissions; a new one gets 0666 minus the umask. Targets that are not regular
// files (/dev/full, a FIFO, a directory, /dev/stdout) are refused: replacing them would turn
// a device node into a JSON file. Errors are lrnn::Error (kind Io) naming the path and the
// system's reason.
void write_file_atomically(const std::string& path, std::string_view content);

// The checks write_file_atomically makes before writing (a regular file or none, in a
// writable directory), for callers that should fail before long work rather than after it.
void check_can_write_atomically(const std::string& path);

}  // namespace lrnn
