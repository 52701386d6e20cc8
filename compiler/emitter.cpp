#include "compiler/emitter.h"

#include <cctype>
#include <numeric>

namespace magicube::cg {

namespace {

using Bound = std::optional<long long>;
constexpr long long kBig = 1LL << 62;  // ranges beyond this are dropped (no overflow worries)

Bound checked(__int128 v) { return v > kBig || v < -kBig ? Bound() : Bound((long long)v); }

// Skips a string or character literal starting at s[i]; returns the index after it.
size_t skip_literal(const std::string &s, size_t i) {
  const char q = s[i];
  for (++i; i < s.size() && s[i] != q; ++i)
    if (s[i] == '\\') ++i;
  return i + 1;
}

// The index after the balanced group that opens at s[i] ('(' or '['), or npos.
size_t skip_group(const std::string &s, size_t i) {
  int depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' || c == '\'') {
      i = skip_literal(s, i);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}')
      if (--depth == 0) return i + 1;
    ++i;
  }
  return std::string::npos;
}

bool ident_start(char c) { return std::isalpha((unsigned char)c) || c == '_'; }
bool ident_char(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

// Whether text reads as one primary expression: a literal, or an identifier followed by
// calls, subscripts and member accesses.
bool is_primary(const std::string &s) {
  if (s.empty()) return false;
  size_t i = 0;
  if (std::isdigit((unsigned char)s[0])) {
    while (i < s.size() && (std::isalnum((unsigned char)s[i]) || s[i] == '.')) ++i;
    return i == s.size();
  }
  if (!ident_start(s[0])) return false;
  while (i < s.size() && ident_char(s[i])) ++i;
  while (i < s.size()) {
    if (s[i] == '(' || s[i] == '[') {
      i = skip_group(s, i);
      if (i == std::string::npos) return false;
    } else if (s[i] == '.' || (s[i] == '-' && i + 1 < s.size() && s[i + 1] == '>')) {
      i += s[i] == '.' ? 1 : 2;
      if (i >= s.size() || !ident_start(s[i])) return false;
      while (i < s.size() && ident_char(s[i])) ++i;
    } else {
      return false;
    }
  }
  return true;
}

long long gcd(long long a, long long b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

}  // namespace

// Builds expressions; every fold is decided here.
struct ExprBuilder {
  static Expr make(std::string text, int prec, Bound lo = {}, Bound hi = {}, long long multiple = 1) {
    Expr e;
    e.text_ = std::move(text);
    e.prec_ = prec;
    e.lo_ = lo;
    e.hi_ = hi;
    e.multiple_ = multiple < 0 ? -multiple : multiple;
    return e;
  }
  static Expr lit(long long v) {
    Expr e = make(std::to_string(v), v < 0 ? kUnary : kPrimary, v, v, v);
    e.literal_ = true;
    return e;
  }
  // Parenthesizes x as an operand that needs at least precedence `need`.
  static std::string operand(const Expr &x, int need) { return x.prec() < need ? "(" + x.str() + ")" : x.str(); }
  // A call argument or subscript: bracketed only when its text has a comma of its own.
  static std::string argument(const Expr &x) {
    if (x.prec() > kLowest) return x.str();
    const std::string &s = x.str();
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '"' || s[i] == '\'') {
        i = skip_literal(s, i) - 1;
        continue;
      }
      if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++depth;
      if (s[i] == ')' || s[i] == ']' || s[i] == '}') --depth;
      if (s[i] == ',' && depth == 0) return "(" + s + ")";
    }
    return s;
  }

  // The operand precedence an operator needs for readability as well as correctness: bit
  // operations and shifts take only primaries and unaries (or a chain of the same bit
  // operation on the left); && inside || and comparisons inside comparisons are bracketed.
  static std::string binary_text(const std::string &op, int prec, const Expr &a, const Expr &b) {
    int need_a = prec, need_b = prec + 1;
    if (prec == kBitAnd || prec == kBitOr || prec == kBitXor) {
      need_a = a.prec() == prec ? prec : kUnary;
      need_b = kUnary;
    } else if (prec == kShift) {
      need_a = need_b = kUnary;
    } else if (prec == kLogOr) {
      need_a = need_b = kLogOr + (a.prec() == kLogAnd || b.prec() == kLogAnd ? 2 : 0);
      need_a = a.prec() == kLogOr ? kLogOr : need_a;
    } else if (prec == kEquality || prec == kRelational) {
      need_a = need_b = kShift;
    } else if (prec == kMultiplicative && a.prec() == kMultiplicative) {
      // x * y / z reads left to right; x % y * z and x / y * z get brackets.
      need_a = a.op_ == "*" ? prec : prec + 1;
    }
    return operand(a, need_a) + " " + op + " " + operand(b, need_b);
  }
  static Expr binary(const std::string &op, int prec, const Expr &a, const Expr &b, Bound lo = {}, Bound hi = {},
                     long long multiple = 1) {
    Expr e = make(binary_text(op, prec, a, b), prec, lo, hi, multiple);
    e.op_ = op;
    return e;
  }
  // Both operands known: a literal, or (a named constant involved) the text with its value.
  static Expr both_known(const std::string &op, int prec, const Expr &a, const Expr &b, long long v) {
    if (a.literal() && b.literal()) return lit(v);
    return binary(op, prec, a, b, v, v, v);
  }
  // A result whose range is one value is that literal.
  static Expr settle(Expr e) {
    if (!e.literal_ && e.lo_ && e.hi_ && *e.lo_ == *e.hi_) return lit(*e.lo_);
    return e;
  }

  static Expr add(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("+", kAdditive, a, b, a.value() + b.value());
    if (b.is(0)) return a;
    if (a.is(0)) return b;
    if (b.literal() && a.add_base()) return add(*a.add_base(), lit(a.add_offset() + b.value()));
    if (b.add_base()) return add(add(a, *b.add_base()), lit(b.add_offset()));  // a + (x + 1) = a + x + 1
    Bound lo, hi;
    if (a.lo() && b.lo()) lo = checked((__int128)*a.lo() + *b.lo());
    if (a.hi() && b.hi()) hi = checked((__int128)*a.hi() + *b.hi());
    const long long m = gcd(a.multiple(), b.multiple());
    Expr e = b.literal() && b.value() < 0 ? binary("-", kAdditive, a, lit(-b.value()), lo, hi, m)
                                          : binary("+", kAdditive, a, b, lo, hi, m);
    if (b.literal()) e.add_base_ = std::make_shared<Expr>(a), e.add_offset_ = b.value();
    auto terms = std::make_shared<std::vector<Expr>>();
    if (a.terms()) *terms = *a.terms();
    else terms->push_back(a);
    terms->push_back(b);
    e.terms_ = std::move(terms);
    return settle(e);
  }
  static Expr sub(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("-", kAdditive, a, b, a.value() - b.value());
    if (b.is(0)) return a;
    if (b.literal()) return add(a, lit(-b.value()));
    Bound lo, hi;
    if (a.lo() && b.hi()) lo = checked((__int128)*a.lo() - *b.hi());
    if (a.hi() && b.lo()) hi = checked((__int128)*a.hi() - *b.lo());
    return settle(binary("-", kAdditive, a, b, lo, hi, gcd(a.multiple(), b.multiple())));
  }
  static Expr mul(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("*", kMultiplicative, a, b, a.value() * b.value());
    if (a.is(0) || b.is(0)) return lit(0);
    if (b.is(1)) return a;
    if (a.is(1)) return b;
    if (b.literal() && a.mul_base()) return mul(*a.mul_base(), lit(a.mul_factor() * b.value()));
    Bound lo, hi;
    if (a.lo() && a.hi() && b.lo() && b.hi()) {
      const __int128 p[4] = {(__int128)*a.lo() * *b.lo(), (__int128)*a.lo() * *b.hi(), (__int128)*a.hi() * *b.lo(),
                             (__int128)*a.hi() * *b.hi()};
      lo = checked(std::min(std::min(p[0], p[1]), std::min(p[2], p[3])));
      hi = checked(std::max(std::max(p[0], p[1]), std::max(p[2], p[3])));
    }
    const __int128 m = (__int128)a.multiple() * b.multiple();
    Expr e = binary("*", kMultiplicative, a, b, lo, hi, m > kBig ? 1 : (long long)m);
    if (b.literal()) e.mul_base_ = std::make_shared<Expr>(a), e.mul_factor_ = b.value();
    else if (a.literal()) e.mul_base_ = std::make_shared<Expr>(b), e.mul_factor_ = a.value();
    return settle(e);
  }
  static Expr div(const Expr &a, const Expr &b) {
    if (a.known() && b.known() && b.value() != 0) return both_known("/", kMultiplicative, a, b, a.value() / b.value());
    if (b.is(1)) return a;
    if (b.literal() && b.value() > 0 && a.mul_base() && a.mul_factor() > 0) {
      const long long f = a.mul_factor(), d = b.value();
      if (f % d == 0) return mul(*a.mul_base(), lit(f / d));
      if (d % f == 0) return div(*a.mul_base(), lit(d / f));
    }
    Bound lo, hi;
    long long m = 1;
    if (b.known() && b.value() > 0) {
      if (a.lo()) lo = *a.lo() / b.value();  // truncation is monotonic
      if (a.hi()) hi = *a.hi() / b.value();
      if (a.multiple() % b.value() == 0) m = a.multiple() / b.value();
    }
    return settle(binary("/", kMultiplicative, a, b, lo, hi, m));
  }
  static Expr mod(const Expr &a, const Expr &b) {
    if (a.known() && b.known() && b.value() != 0) return both_known("%", kMultiplicative, a, b, a.value() % b.value());
    if (b.is(1)) return lit(0);
    Bound lo, hi;
    if (b.known() && b.value() > 0) {
      const long long d = b.value();
      if (a.lo() && *a.lo() >= 0 && a.hi() && *a.hi() < d) return a;
      if (a.multiple() % d == 0) return lit(0);
      lo = a.lo() && *a.lo() >= 0 ? 0 : -(d - 1);
      hi = d - 1;
    }
    return settle(binary("%", kMultiplicative, a, b, lo, hi));
  }
  static Expr shl(const Expr &a, const Expr &b) {
    if (a.known() && b.known() && b.value() >= 0 && b.value() < 62)
      return both_known("<<", kShift, a, b, a.value() << b.value());
    if (b.is(0)) return a;
    if (a.is(0)) return a;
    Bound lo, hi;
    long long m = 1;
    if (b.known() && b.value() >= 0 && b.value() < 30) {
      if (a.lo()) lo = checked((__int128)*a.lo() << b.value());
      if (a.hi()) hi = checked((__int128)*a.hi() << b.value());
      m = a.multiple() << b.value();
    }
    return settle(binary("<<", kShift, a, b, lo, hi, m));
  }
  static Expr shr(const Expr &a, const Expr &b) {
    if (a.known() && b.known() && b.value() >= 0 && b.value() < 63)
      return both_known(">>", kShift, a, b, a.value() >> b.value());
    if (b.is(0)) return a;
    Bound lo, hi;
    if (b.known() && b.value() >= 0 && a.lo() && *a.lo() >= 0) {
      lo = *a.lo() >> b.value();
      if (a.hi()) hi = *a.hi() >> b.value();
    }
    return settle(binary(">>", kShift, a, b, lo, hi));
  }
  static Expr band(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("&", kBitAnd, a, b, a.value() & b.value());
    if (a.known() && !b.known()) return band(b, a);
    if (b.is(0)) return lit(0);
    if (b.is(-1)) return a;
    if (b.known()) {
      const long long m = b.value();
      // x = base + c with base a multiple of 2^k: the low k bits of x are c's.
      const Expr *base = a.add_base() ? a.add_base() : &a;
      const long long c = a.add_base() ? a.add_offset() : 0;
      if (m > 0 && ((m + 1) & m) == 0) {  // m = 2^k - 1
        if (base->multiple() % (m + 1) == 0) return lit(c & m);
        if (a.lo() && *a.lo() >= 0 && a.hi() && *a.hi() <= m) return a;
        const bool nonneg = a.lo() && *a.lo() >= 0 && a.hi();
        return settle(binary("&", kBitAnd, a, b, 0, nonneg ? std::min(m, *a.hi()) : m));
      }
      if (m < 0 && ((-m) & (-m - 1)) == 0) {  // m = ~(2^k - 1)
        const long long unit = -m;
        if (a.multiple() % unit == 0) return a;
        if (base->multiple() % unit == 0) return add(*base, lit(c & m));
      }
    }
    return binary("&", kBitAnd, a, b);
  }
  static Expr bor(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("|", kBitOr, a, b, a.value() | b.value());
    if (b.is(0)) return a;
    if (a.is(0)) return b;
    return binary("|", kBitOr, a, b);
  }
  static Expr bxor(const Expr &a, const Expr &b) {
    if (a.known() && b.known()) return both_known("^", kBitXor, a, b, a.value() ^ b.value());
    if (b.is(0)) return a;
    if (a.is(0)) return b;
    return binary("^", kBitXor, a, b);
  }
  // A comparison: decided (1 / 0) by values or ranges, else its text.
  static Expr compare(const std::string &op, const Expr &a, const Expr &b) {
    const int prec = op == "==" || op == "!=" ? kEquality : kRelational;
    auto decided = [&]() -> std::optional<bool> {
      const Bound alo = a.lo(), ahi = a.hi(), blo = b.lo(), bhi = b.hi();
      if (a.known() && b.known()) {
        const long long x = a.value(), y = b.value();
        return op == "==" ? x == y : op == "!=" ? x != y : op == "<" ? x < y : op == "<=" ? x <= y : x >= y;
      }
      const bool disjoint = (ahi && blo && *ahi < *blo) || (alo && bhi && *alo > *bhi);
      if (op == "==" && disjoint) return false;
      if (op == "!=" && disjoint) return true;
      if (op == "<") {
        if (ahi && blo && *ahi < *blo) return true;
        if (alo && bhi && *alo >= *bhi) return false;
      }
      if (op == "<=") {
        if (ahi && blo && *ahi <= *blo) return true;
        if (alo && bhi && *alo > *bhi) return false;
      }
      if (op == ">=") {
        if (alo && bhi && *alo >= *bhi) return true;
        if (ahi && blo && *ahi < *blo) return false;
      }
      return std::nullopt;
    }();
    if (decided) return lit(*decided ? 1 : 0);
    return binary(op, prec, a, b, 0, 1);
  }
  static Expr logic(bool is_and, const Expr &a, const Expr &b) {
    if (is_and) {
      if (a.is(0) || b.is(0)) return lit(0);
      if (a.known()) return b;
      if (b.known()) return a;
      return binary("&&", kLogAnd, a, b, 0, 1);
    }
    if ((a.known() && !a.is(0)) || (b.known() && !b.is(0))) return lit(1);
    if (a.is(0)) return b;
    if (b.is(0)) return a;
    return binary("||", kLogOr, a, b, 0, 1);
  }
  static Expr select(const Expr &c, const Expr &a, const Expr &b) {
    if (c.known()) return c.value() ? a : b;
    if (a.str() == b.str()) return a;
    Bound lo, hi;
    if (a.lo() && b.lo()) lo = std::min(*a.lo(), *b.lo());
    if (a.hi() && b.hi()) hi = std::max(*a.hi(), *b.hi());
    const std::string text = operand(c, kLogOr) + " ? " + operand(a, kLogOr) + " : " + operand(b, kTernary);
    return make(text, kTernary, lo, hi, gcd(a.multiple(), b.multiple()));
  }
};

Expr::Expr(int v) : Expr(ExprBuilder::lit(v)) {}
Expr::Expr(long long v) : Expr(ExprBuilder::lit(v)) {}
Expr::Expr(const char *text) : Expr(std::string(text)) {}
Expr::Expr(const std::string &text) : text_(text), prec_(is_primary(text) ? kPrimary : kLowest) {}

Expr Expr::code(std::string text, int prec) { return ExprBuilder::make(std::move(text), prec); }
Expr Expr::var(std::string name, std::optional<long long> lo, std::optional<long long> hi, long long multiple) {
  return ExprBuilder::make(std::move(name), kPrimary, lo, hi, multiple);
}
Expr Expr::like(std::string name, const Expr &init) {
  return ExprBuilder::make(std::move(name), kPrimary, init.lo(), init.hi(), init.multiple());
}
Expr Expr::named(std::string name, long long value) {
  return ExprBuilder::make(std::move(name), kPrimary, value, value, value);
}

Expr operator+(const Expr &a, const Expr &b) { return ExprBuilder::add(a, b); }
Expr operator-(const Expr &a, const Expr &b) { return ExprBuilder::sub(a, b); }
Expr operator*(const Expr &a, const Expr &b) { return ExprBuilder::mul(a, b); }
Expr operator/(const Expr &a, const Expr &b) { return ExprBuilder::div(a, b); }
Expr operator%(const Expr &a, const Expr &b) { return ExprBuilder::mod(a, b); }
Expr operator<<(const Expr &a, const Expr &b) { return ExprBuilder::shl(a, b); }
Expr operator>>(const Expr &a, const Expr &b) { return ExprBuilder::shr(a, b); }
Expr operator&(const Expr &a, const Expr &b) { return ExprBuilder::band(a, b); }
Expr operator|(const Expr &a, const Expr &b) { return ExprBuilder::bor(a, b); }
Expr operator^(const Expr &a, const Expr &b) { return ExprBuilder::bxor(a, b); }
Expr eq(const Expr &a, const Expr &b) { return ExprBuilder::compare("==", a, b); }
Expr ne(const Expr &a, const Expr &b) { return ExprBuilder::compare("!=", a, b); }
Expr lt(const Expr &a, const Expr &b) { return ExprBuilder::compare("<", a, b); }
Expr le(const Expr &a, const Expr &b) { return ExprBuilder::compare("<=", a, b); }
Expr ge(const Expr &a, const Expr &b) { return ExprBuilder::compare(">=", a, b); }
Expr land(const Expr &a, const Expr &b) { return ExprBuilder::logic(true, a, b); }
Expr lor(const Expr &a, const Expr &b) { return ExprBuilder::logic(false, a, b); }
Expr select(const Expr &c, const Expr &a, const Expr &b) { return ExprBuilder::select(c, a, b); }

Expr call(const std::string &fn, const std::vector<Expr> &args) {
  std::string t = fn + "(";
  for (size_t i = 0; i < args.size(); ++i) t += (i ? ", " : "") + ExprBuilder::argument(args[i]);
  return Expr::code(t + ")", kPrimary);
}
Expr at(const Expr &base, const Expr &i) {
  return Expr::code(ExprBuilder::operand(base, kPrimary) + "[" + ExprBuilder::argument(i) + "]", kPrimary);
}
Expr cast(const std::string &type, const Expr &x) {
  return Expr::code("(" + type + ")" + ExprBuilder::operand(x, kUnary), kUnary);
}
Expr offset(const Expr &ptr, const Expr &idx) {
  if (!idx.terms()) return ptr + idx;
  Expr r = ptr;
  for (const Expr &t : *idx.terms()) r = r + t;
  return r;
}
Expr addr(const Expr &x) { return Expr::code("&" + ExprBuilder::operand(x, kUnary), kUnary); }
Expr deref(const Expr &x) { return Expr::code("*" + ExprBuilder::operand(x, kUnary), kUnary); }
Expr neg(const Expr &x) { return x.known() ? Expr(-x.value()) : Expr::code("-" + ExprBuilder::operand(x, kUnary), kUnary); }

// ---- Emitter ------------------------------------------------------------------------------

Emitter::Emitter(int indent, int width) : base_(indent), width_(width), scopes_(1) {}

void Emitter::put(const std::string &indent, const std::string &text) { out_ += indent + text + "\n"; }

namespace {

// Where a too-long line may break: after its outermost commas, else before its outermost
// ' : ' (a conditional's), ' || ', ' && ', ' | ' or ' + '. Returns the pieces (each without
// the space at the break), or one piece when there is no break point.
std::vector<std::string> split_points(const std::string &s, bool &one_per_line) {
  std::vector<int> depth(s.size(), 0);
  std::vector<bool> in_lit(s.size(), false);
  int d = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '"' || s[i] == '\'') {
      const size_t j = std::min(skip_literal(s, i), s.size());
      for (size_t k = i; k < j; ++k) depth[k] = d, in_lit[k] = true;
      i = j;
      continue;
    }
    if (s[i] == ')' || s[i] == ']' || s[i] == '}') --d;
    depth[i] = d;
    if (s[i] == '(' || s[i] == '[' || s[i] == '{') ++d;
    ++i;
  }
  // An asm statement's operand lists (" :: "), then commas, conditionals, logic, sums.
  static const char *const kinds[] = {" :: ", ",", " : ", " || ", " && ", " | ", " + ", " = "};
  constexpr int kComma = 1, kColon = 2, kAssign = 7;
  int best_depth = 1 << 20, best_kind = 0;
  std::vector<std::pair<size_t, size_t>> cuts;  // [end of piece, start of next)
  for (int k = 0; k < 8; ++k) {
    if (k == kAssign && !cuts.empty()) break;  // after ' = ' only when nothing else breaks
    const std::string tok = kinds[k];
    for (size_t i = 0; i + tok.size() <= s.size(); ++i) {
      if (in_lit[i] || s.compare(i, tok.size(), tok) != 0) continue;
      if (k == kComma && (i + 1 >= s.size() || s[i + 1] != ' ')) continue;
      if (k == kColon && ((i > 0 && s[i - 1] == ':') || (i + 3 < s.size() && s[i + 3] == ':'))) continue;
      if (depth[i] < best_depth || (depth[i] == best_depth && k < best_kind) || cuts.empty()) {
        best_depth = depth[i], best_kind = k;
        cuts.clear();
      }
      if (depth[i] == best_depth && k == best_kind)
        cuts.push_back(k == kComma ? std::pair{i + 1, i + 2} : k == kAssign ? std::pair{i + 2, i + 3} : std::pair{i, i + 1});
    }
  }
  one_per_line = best_kind == kColon;  // a chain of conditionals: one alternative a line
  std::vector<std::string> pieces;
  size_t start = 0;
  for (auto [end, next] : cuts) {
    pieces.push_back(s.substr(start, end - start));
    start = next;
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

}  // namespace

void Emitter::wrap(const std::string &indent, const std::string &cont, const std::string &code) {
  if (int(indent.size() + code.size()) <= width_ || code.rfind('#', 0) == 0) return put(indent, code);
  bool one_per_line = false;
  const std::vector<std::string> pieces = split_points(code, one_per_line);
  if (pieces.size() < 2) return put(indent, code);
  std::string cur = pieces[0], cur_indent = indent;
  auto flush = [&]() {
    if (int(cur_indent.size() + cur.size()) > width_) wrap(cur_indent, cont + "    ", cur);
    else put(cur_indent, cur);
  };
  for (size_t i = 1; i < pieces.size(); ++i) {
    if (!one_per_line && int(cur_indent.size() + cur.size() + 1 + pieces[i].size()) <= width_) {
      cur += " " + pieces[i];
    } else {
      flush();
      cur = pieces[i], cur_indent = cont;
    }
  }
  flush();
}

void Emitter::line(const std::string &code, const std::string &comment) {
  const std::string in = indent();
  if (comment.empty()) return wrap(in, in + "    ", code);
  if (int(in.size() + code.size() + 4 + comment.size()) <= width_) return put(in, code + "  // " + comment);
  this->comment(comment);
  wrap(in, in + "    ", code);
}

void Emitter::comment(const std::string &text) {
  const std::string in = indent() + "// ";
  std::string cur;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (!cur.empty() && int(in.size() + cur.size() + 1 + word.size()) > width_) {
      put(in, cur);
      cur.clear();
    }
    cur += (cur.empty() ? "" : " ") + word;
    i = j + 1;
  }
  put(in, cur);
}

void Emitter::blank() { out_ += "\n"; }

void Emitter::raw(const std::string &text) {
  out_ += text;
  if (!text.empty() && text.back() != '\n') out_ += "\n";
}

void Emitter::declare(const std::string &names) {
  size_t i = 0;
  while (i < names.size()) {
    size_t j = names.find(',', i);
    if (j == std::string::npos) j = names.size();
    std::string n = names.substr(i, j - i);
    while (!n.empty() && (n[0] == ' ' || n[0] == '*')) n.erase(0, 1);
    n = n.substr(0, n.find_first_of("[= "));  // "x[4]", "x = 0": x
    if (!scopes_.back().insert(n).second) errors_.push_back("codegen: '" + n + "' declared twice in one scope");
    i = j + 1;
  }
}

std::string Emitter::fresh(const std::string &prefix) {
  for (int i = 0;; ++i) {
    std::string n = prefix + std::to_string(i);
    bool taken = fresh_used_.count(n) > 0;
    for (const auto &s : scopes_) taken = taken || s.count(n) > 0;
    if (!taken) {
      fresh_used_.insert(n);
      return n;
    }
  }
}

namespace {
std::string typed(const std::string &type, const std::string &name) {
  return type + (!type.empty() && type.back() == '*' ? "" : " ") + name;
}
}  // namespace

void Emitter::decl(const std::string &type, const std::string &name, const Expr &init, const std::string &comment) {
  declare(name);
  line(typed(type, name) + " = " + init.str() + ";", comment);
}

void Emitter::decl_only(const std::string &type, const std::string &name, const std::string &comment) {
  declare(name);
  line(typed(type, name) + ";", comment);
}

void Emitter::assign(const Expr &lhs, const Expr &rhs, const std::string &comment) {
  line(lhs.str() + " = " + rhs.str() + ";", comment);
}

void Emitter::guarded(const Expr &cond, const std::string &stmt, const std::string &comment) {
  if (cond.is(0)) return;
  if (cond.known()) return line(stmt, comment);
  const std::string one = "if (" + cond.str() + ") " + stmt;
  if (int(indent().size() + one.size() + (comment.empty() ? 0 : 4 + comment.size())) <= width_) return line(one, comment);
  open("if (" + cond.str() + ")", comment);
  line(stmt);
  close();
}

void Emitter::open(const std::string &head, const std::string &comment) {
  line(head.empty() ? "{" : head + " {", comment);
  scopes_.emplace_back();
}

void Emitter::close(const std::string &tail) {
  if (scopes_.size() <= 1) {
    errors_.push_back("codegen: a scope closed twice");
    return;
  }
  scopes_.pop_back();
  line("}" + tail);
}

void Emitter::close_open(const std::string &head) {
  if (scopes_.size() <= 1) {
    errors_.push_back("codegen: close_open outside a scope");
    return;
  }
  scopes_.pop_back();
  line("} " + head + " {");
  scopes_.emplace_back();
}

Emitter::Scope Emitter::scope(const std::string &head, const std::string &comment, std::string tail) {
  open(head, comment);
  return Scope(this, std::move(tail));
}

}  // namespace magicube::cg
