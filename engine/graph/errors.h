#pragma once
// The engine's exception types. Every message says what was expected, what was found and where.

#include <stdexcept>
#include <string>

namespace tscope::engine {

// A value or variable does not fit a type (wrong dtype, rank or static dimension).
class TypeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A graph operation was asked for something the graph's structure does not allow (a variable that
// is not in the graph, a node imported into two graphs, a cycle, broken clients).
class GraphError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A feature's validate() refused the graph after a change (Validator reverts the change).
class InconsistencyError : public GraphError {
 public:
  using GraphError::GraphError;
};

// Computing a node's test value failed, or an input lacked one, with test values in raise mode
// (Note [Test values] in config.h).
class TestValueError : public TypeError {
 public:
  using TypeError::TypeError;
};

}  // namespace tscope::engine
