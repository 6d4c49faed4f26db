// The pattern language's parser (grammar in pattern.h): a small recursive descent over one
// expression or one "lhs -> rhs" rule, with every error naming the rule and the column.
#include "engine/rewrite/pattern_internal.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <stdexcept>

namespace tscope::engine::pattern_detail {

namespace {

bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || c == '_';
}
bool isNameChar(char c) {
  return isNameStart(c) || (c >= '0' && c <= '9');
}
bool isDigit(char c) {
  return c >= '0' && c <= '9';
}

class Parser {
 public:
  Parser(std::string_view text, std::string context)
      : m_text(text), m_context(std::move(context)) {}

  Node expression() {
    Node left = term();
    for (;;) {
      skipSpace();
      if (at('+')) {
        const std::size_t col = m_pos++;
        left = binary(ScalarOp::Add, std::move(left), term(), col);
      } else if (at('-') && !atArrow()) {
        const std::size_t col = m_pos++;
        left = binary(ScalarOp::Sub, std::move(left), term(), col);
      } else {
        return left;
      }
    }
  }

  void expectArrow() {
    skipSpace();
    if (!atArrow()) fail(m_pos, "expected '->' between the two sides, found " + found());
    m_pos += 2;
  }

  void expectEnd() {
    skipSpace();
    if (m_pos < m_text.size()) fail(m_pos, "expected the end, found " + found());
  }

  [[noreturn]] void fail(std::size_t pos, const std::string& what) const {
    throw std::invalid_argument(m_context + ", column " + std::to_string(pos + 1) + ": " + what);
  }

 private:
  Node term() {
    Node left = unary();
    for (;;) {
      skipSpace();
      if (at('*')) {
        const std::size_t col = m_pos++;
        left = binary(ScalarOp::Mul, std::move(left), unary(), col);
      } else if (at('/')) {
        const std::size_t col = m_pos++;
        left = binary(ScalarOp::TrueDiv, std::move(left), unary(), col);
      } else {
        return left;
      }
    }
  }

  Node unary() {
    skipSpace();
    if (at('-') && !atArrow()) {
      const std::size_t col = m_pos++;
      Node operand = unary();
      if (operand.kind == Kind::Number) {  // "-1" is the number -1, so it matches a constant -1
        operand.number = -operand.number;
        operand.column = static_cast<int>(col);
        return operand;
      }
      Node n;
      n.kind = Kind::Scalar;
      n.scalar = ScalarOp::Neg;
      n.name = "neg";
      n.column = static_cast<int>(col);
      n.args.push_back(std::move(operand));
      return n;
    }
    return primary();
  }

  Node primary() {
    skipSpace();
    const std::size_t col = m_pos;
    if (m_pos >= m_text.size()) fail(col, "expected an operand, found the end");
    const char c = m_text[m_pos];
    if (c == '(') {
      ++m_pos;
      Node inner = expression();
      expect(')', "to close the '(' at column " + std::to_string(col + 1));
      return inner;
    }
    if (isDigit(c) || (c == '.' && m_pos + 1 < m_text.size() && isDigit(m_text[m_pos + 1])))
      return number();
    if (std::isupper(static_cast<unsigned char>(c)))
      fail(col,
           "expected a lowercase name (variables and functions are lowercase), found " + found());
    if (!isNameStart(c)) fail(col, "expected an operand, found " + found());
    std::string name = identifier();
    skipSpace();
    if (at('(')) return call(std::move(name), col);
    Node v;
    v.kind = Kind::Variable;
    v.name = std::move(name);
    v.column = static_cast<int>(col);
    return v;
  }

  Node number() {
    const std::size_t col = m_pos;
    std::size_t end = m_pos;
    while (end < m_text.size() && (isDigit(m_text[end]) || m_text[end] == '.')) ++end;
    if (end < m_text.size() && (m_text[end] == 'e' || m_text[end] == 'E')) {
      std::size_t e = end + 1;
      if (e < m_text.size() && (m_text[e] == '+' || m_text[e] == '-')) ++e;
      if (e < m_text.size() && isDigit(m_text[e])) {
        while (e < m_text.size() && isDigit(m_text[e])) ++e;
        end = e;
      }
    }
    const std::string literal(m_text.substr(m_pos, end - m_pos));
    char* stop = nullptr;
    const double value = std::strtod(literal.c_str(), &stop);
    if (stop != literal.c_str() + literal.size()) fail(col, "'" + literal + "' is not a number");
    m_pos = end;
    if (m_pos < m_text.size() && isNameChar(m_text[m_pos]))
      fail(m_pos, "expected an operator after the number " + literal + ", found " + found());
    Node n;
    n.kind = Kind::Number;
    n.number = value;
    n.column = static_cast<int>(col);
    return n;
  }

  Node call(std::string name, std::size_t col) {
    Node n;
    n.name = name;
    n.column = static_cast<int>(col);
    if (const FunctionInfo* fn = findFunction(name)) {
      n.kind = Kind::Function;
      n.fn = fn;
    } else if (const auto op = scalarOpFromName(name)) {
      if (*op == ScalarOp::Cast)
        fail(col, "cast needs a target dtype, which patterns cannot express; write a NodeRewriter");
      n.kind = Kind::Scalar;
      n.scalar = *op;
    } else {
      fail(col, "unknown function '" + name +
                    "': expected a scalar op (add, sub, mul, true_div, neg, exp, "
                    "log, log1p, expm1, sigmoid, softplus, ...) or one of " +
                    functionNames());
    }
    ++m_pos;  // '('
    skipSpace();
    if (at(')')) fail(m_pos, name + "() needs arguments");
    for (;;) {
      skipSpace();
      const std::size_t argCol = m_pos;
      if (isAttribute()) {
        Attr a;
        a.name = identifier();
        a.column = static_cast<int>(argCol);
        skipSpace();
        ++m_pos;  // '='
        skipSpace();
        const std::size_t valueCol = m_pos;
        if (m_pos < m_text.size() && isNameStart(m_text[m_pos])) {
          a.param = identifier();
        } else {
          bool negative = false;
          if (at('-')) {
            negative = true;
            ++m_pos;
          }
          if (m_pos >= m_text.size() || !isDigit(m_text[m_pos]))
            fail(valueCol, "expected a name or an integer for the attribute " + a.name +
                               ", found " + found());
          int value = 0;
          while (m_pos < m_text.size() && isDigit(m_text[m_pos]))
            value = value * 10 + (m_text[m_pos++] - '0');
          a.value = negative ? -value : value;
        }
        if (n.kind != Kind::Function || n.fn->attr.empty())
          fail(argCol, name + " takes no attributes, found '" + a.name + "'");
        if (a.name != n.fn->attr)
          fail(argCol, name + " takes the attribute " + std::string(n.fn->attr) + ", found '" +
                           a.name + "'");
        if (!n.attrs.empty()) fail(argCol, "the attribute " + a.name + " is given twice");
        n.attrs.push_back(std::move(a));
      } else {
        if (!n.attrs.empty()) fail(argCol, "operands must come before the attributes of " + name);
        n.args.push_back(expression());
      }
      skipSpace();
      if (at(',')) {
        ++m_pos;
        continue;
      }
      expect(')',
             "to close the arguments of " + name + " (column " + std::to_string(col + 1) + ")");
      break;
    }
    const int count = static_cast<int>(n.args.size());
    const int arity = n.kind == Kind::Function ? n.fn->arity : scalarOpInfo(n.scalar).arity;
    if (arity >= 0 && count != arity)
      fail(col, name + " takes " + std::to_string(arity) + " operand" + (arity == 1 ? "" : "s") +
                    ", found " + std::to_string(count));
    if (arity < 0 && count < 2)
      fail(col, name + " takes two or more operands, found " + std::to_string(count));
    return n;
  }

  // name '=' (not '=='), looking ahead without consuming.
  bool isAttribute() const {
    std::size_t p = m_pos;
    if (p >= m_text.size() || !isNameStart(m_text[p])) return false;
    while (p < m_text.size() && isNameChar(m_text[p])) ++p;
    while (p < m_text.size() && m_text[p] == ' ') ++p;
    return p < m_text.size() && m_text[p] == '=';
  }

  std::string identifier() {
    const std::size_t start = m_pos;
    while (m_pos < m_text.size() && isNameChar(m_text[m_pos])) ++m_pos;
    return std::string(m_text.substr(start, m_pos - start));
  }

  Node binary(ScalarOp op, Node a, Node b, std::size_t col) {
    Node n;
    n.kind = Kind::Scalar;
    n.scalar = op;
    n.name = std::string(scalarOpInfo(op).name);
    n.column = static_cast<int>(col);
    n.args.push_back(std::move(a));
    n.args.push_back(std::move(b));
    return n;
  }

  void expect(char c, const std::string& why) {
    skipSpace();
    if (!at(c)) fail(m_pos, std::string("expected '") + c + "' " + why + ", found " + found());
    ++m_pos;
  }

  std::string found() const {
    if (m_pos >= m_text.size()) return "the end";
    if (atArrow()) return "'->'";
    std::size_t end = m_pos + 1;
    if (isNameChar(m_text[m_pos]))
      while (end < m_text.size() && isNameChar(m_text[end])) ++end;
    return "'" + std::string(m_text.substr(m_pos, end - m_pos)) + "'";
  }

  void skipSpace() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos])))
      ++m_pos;
  }
  bool at(char c) const { return m_pos < m_text.size() && m_text[m_pos] == c; }
  bool atArrow() const {
    return m_pos + 1 < m_text.size() && m_text[m_pos] == '-' && m_text[m_pos + 1] == '>';
  }

  std::string_view m_text;
  std::size_t m_pos = 0;
  std::string m_context;
};

void countVariables(const Node& n, std::map<std::string, int>& counts) {
  if (n.kind == Kind::Variable) ++counts[n.name];
  for (const Node& a : n.args) countVariables(a, counts);
}

void collectAttrParams(const Node& n, std::set<std::string>& params) {
  for (const Attr& a : n.attrs)
    if (!a.param.empty()) params.insert(a.param);
  for (const Node& a : n.args) collectAttrParams(a, params);
}

// Note [Commutative patterns]: the operand of an add/mul that may take the rest of a wider node.
void markRestOperands(Node& n, const std::map<std::string, int>& counts) {
  for (Node& a : n.args) markRestOperands(a, counts);
  if (n.kind != Kind::Scalar || !isCommutative(n.scalar)) return;
  for (int i = static_cast<int>(n.args.size()) - 1; i >= 0; --i) {
    const Node& a = n.args[static_cast<std::size_t>(i)];
    if (a.kind == Kind::Variable && counts.at(a.name) == 1) {
      n.restIndex = i;
      return;
    }
  }
}

void checkLeft(const Node& n, const Parser& parser) {
  if (n.kind == Kind::Function && n.fn->opName.empty())
    parser.fail(
        static_cast<std::size_t>(n.column),
        n.name + " can only appear on the right side: it is a builder, not an op a graph holds");
  for (const Node& a : n.args) checkLeft(a, parser);
}

void checkRight(const Node& n, const std::map<std::string, int>& vars,
                const std::set<std::string>& params, const Parser& parser, bool& elementwise) {
  if (n.kind == Kind::Variable && !vars.contains(n.name))
    parser.fail(static_cast<std::size_t>(n.column),
                "the variable '" + n.name + "' is not bound by the left side");
  if (n.kind == Kind::Function) {
    elementwise = false;
    if (!n.fn->attr.empty() && n.attrs.empty())
      parser.fail(static_cast<std::size_t>(n.column),
                  n.name + " on the right side needs its attribute: " + n.name + "(..., " +
                      std::string(n.fn->attr) + "=...)");
    for (const Attr& a : n.attrs)
      if (!a.param.empty() && !params.contains(a.param))
        parser.fail(static_cast<std::size_t>(a.column),
                    "the attribute value '" + a.param + "' is not bound by the left side");
  }
  for (const Node& a : n.args) checkRight(a, vars, params, parser, elementwise);
}

}  // namespace

std::shared_ptr<const Node> parseExpression(std::string_view text, const std::string& context) {
  Parser parser(text, context);
  Node root = parser.expression();
  parser.expectEnd();
  std::map<std::string, int> counts;
  countVariables(root, counts);
  markRestOperands(root, counts);
  checkLeft(root, parser);
  return std::make_shared<const Node>(std::move(root));
}

ParsedRule parseRule(std::string_view text, const std::string& context) {
  Parser parser(text, context);
  Node lhs = parser.expression();
  parser.expectArrow();
  Node rhs = parser.expression();
  parser.expectEnd();
  if (lhs.kind != Kind::Scalar && lhs.kind != Kind::Function)
    parser.fail(static_cast<std::size_t>(lhs.column),
                std::string("the left side must be an op applied to operands, found a ") +
                    (lhs.kind == Kind::Variable ? "variable" : "number"));
  checkLeft(lhs, parser);
  std::map<std::string, int> counts;
  countVariables(lhs, counts);
  markRestOperands(lhs, counts);
  std::set<std::string> params;
  collectAttrParams(lhs, params);
  ParsedRule rule;
  checkRight(rhs, counts, params, parser, rule.rhsElementwise);
  rule.lhs = std::make_shared<const Node>(std::move(lhs));
  rule.rhs = std::make_shared<const Node>(std::move(rhs));
  return rule;
}

}  // namespace tscope::engine::pattern_detail
