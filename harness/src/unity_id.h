// DISTMETRICS_UNITY_ID: a name of each source file's own, for the file-local code of the
// descriptor files (properties/, data/generators/), each of which defines its own check(),
// make(), kName... In a unity batch CMake defines it to a different name for each source
// (UNITY_BUILD_UNIQUE_ID, cmake/DistmetricsHelpers.cmake), so the files of one batch keep their
// names apart; compiled alone, a source is its own translation unit and one name does.
//   namespace { namespace DISTMETRICS_UNITY_ID { ...file-local code... } }
//   Property name() { using namespace DISTMETRICS_UNITY_ID; ... }
#pragma once

#ifndef DISTMETRICS_UNITY_ID
#define DISTMETRICS_UNITY_ID file_local
#endif
