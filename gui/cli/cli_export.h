#pragma once
// `tensorscope export FILE -o OUT.(svg|png|dot)`: the graph drawn as the window draws it, without a
// window (private to gui/cli; cli.cpp dispatches to it by the extension of OUT).

#include "engine/io/tsg.h"

#include <QCommandLineParser>

#include <filesystem>
#include <string>

namespace tscope::gui {

// Adds --expand, --heatmap and --scale to the export command's parser.
void addPictureOptions(QCommandLineParser& parser);

// Builds the view model of `which` graph of `doc` (taking the graph out of the document), picks
// the group state from --expand (default: the model's default state), lays it out with Graphviz,
// and writes OUT by its extension (.svg, .png or .dot). Returns what the command prints. Throws
// std::invalid_argument for usage errors (an unknown group path, a bad --scale) and
// std::runtime_error for failures (no profile for --heatmap, I/O errors).
std::string writeGraphPicture(const QCommandLineParser& parser, engine::io::TsgDocument& doc,
                              const std::string& which, const std::filesystem::path& path);

}  // namespace tscope::gui
