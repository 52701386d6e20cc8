// The text side of codegen: expressions that fold their constants and parenthesize only
// where C++ needs it (cg::Expr), and an emitter that owns indentation, scopes, declared
// names and line wrapping (cg::Emitter). Generators say what to compute; how it reads is
// decided here, once.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace magicube::cg {

// C++ operator precedence: higher binds tighter.
enum Prec : int {
  kLowest = 0,  // anything (a comma expression, unknown text)
  kTernary = 2,
  kLogOr = 3,
  kLogAnd = 4,
  kBitOr = 5,
  kBitXor = 6,
  kBitAnd = 7,
  kEquality = 8,
  kRelational = 9,
  kShift = 11,
  kAdditive = 12,
  kMultiplicative = 13,
  kUnary = 15,  // casts, &x, *p, !x, ~x, -x
  kPrimary = 16,
};

// An integer (or pointer, or any) expression of generated code. It knows what generation
// time knows about its value: the value itself (literals and named constants such as KS),
// a range (lane in 0..31), a divisor (tig * 8 is a multiple of 8). Operators fold with
// that knowledge: x + 0, x * 1, (x * 8) / 8, c ? y : y, gid / 8 (gid < 8), the low bits of
// (tig * 8 + 5) & 7, a comparison decided by ranges; they never change what the code
// computes for values in the stated ranges (index arithmetic, which never overflows).
class Expr {
 public:
  Expr(int v);        // NOLINT: a literal
  Expr(long long v);  // NOLINT
  // Code text: primary when it reads as one (an identifier, a literal, a call, a subscript),
  // else parenthesized wherever it is combined.
  Expr(const char *text);         // NOLINT
  Expr(const std::string &text);  // NOLINT
  static Expr code(std::string text, int prec);
  // A variable whose value lies in lo..hi (inclusive; nullopt: unbounded) and is a multiple
  // of `multiple`.
  static Expr var(std::string name, std::optional<long long> lo = std::nullopt,
                  std::optional<long long> hi = std::nullopt, long long multiple = 1);
  // A variable named `name` that knows what `init` knows (its range and divisor).
  static Expr like(std::string name, const Expr &init);
  // A named compile-time constant (constexpr int KS = 32): printed by name, folded by value.
  static Expr named(std::string name, long long value);

  const std::string &str() const { return text_; }
  int prec() const { return prec_; }
  bool known() const { return lo_ && hi_ && *lo_ == *hi_; }
  long long value() const { return *lo_; }
  bool literal() const { return literal_; }  // known and printed as a number
  bool is(long long v) const { return known() && value() == v; }
  std::optional<long long> lo() const { return lo_; }
  std::optional<long long> hi() const { return hi_; }
  long long multiple() const { return multiple_; }  // 0: the value is 0

  // x = add_base + add_offset (a literal), x = mul_base * mul_factor (a literal): what the
  // operators fold through, e.g. (tig * 8 + 32) + 1 = tig * 8 + 33, (n * 4) / 8 = n / 2.
  const Expr *add_base() const { return add_base_.get(); }
  long long add_offset() const { return add_offset_; }
  const Expr *mul_base() const { return mul_base_.get(); }
  long long mul_factor() const { return mul_factor_; }
  // The summands of x = t0 + t1 + ... (left to right), or none when x is not a sum.
  const std::vector<Expr> *terms() const { return terms_.get(); }

 private:
  friend struct ExprBuilder;
  Expr() = default;
  std::string text_;
  int prec_ = kPrimary;
  std::optional<long long> lo_, hi_;
  long long multiple_ = 1;
  bool literal_ = false;
  std::shared_ptr<const Expr> add_base_;
  long long add_offset_ = 0;
  std::shared_ptr<const Expr> mul_base_;
  long long mul_factor_ = 1;
  std::shared_ptr<const std::vector<Expr>> terms_;
  std::string op_;  // the top binary operator ("" for primaries, unaries and code text)
};

Expr operator+(const Expr &a, const Expr &b);
Expr operator-(const Expr &a, const Expr &b);
Expr operator*(const Expr &a, const Expr &b);
Expr operator/(const Expr &a, const Expr &b);  // C++ truncating division
Expr operator%(const Expr &a, const Expr &b);
Expr operator<<(const Expr &a, const Expr &b);
Expr operator>>(const Expr &a, const Expr &b);
Expr operator&(const Expr &a, const Expr &b);
Expr operator|(const Expr &a, const Expr &b);
Expr operator^(const Expr &a, const Expr &b);
// Comparisons and logic: folded to 1 / 0 when decided.
Expr eq(const Expr &a, const Expr &b);
Expr ne(const Expr &a, const Expr &b);
Expr lt(const Expr &a, const Expr &b);
Expr le(const Expr &a, const Expr &b);
Expr ge(const Expr &a, const Expr &b);
Expr land(const Expr &a, const Expr &b);  // a && b
Expr lor(const Expr &a, const Expr &b);   // a || b
Expr select(const Expr &c, const Expr &a, const Expr &b);  // c ? a : b
Expr call(const std::string &fn, const std::vector<Expr> &args);
Expr at(const Expr &base, const Expr &i);  // base[i] (not `index`: POSIX has one)
Expr cast(const std::string &type, const Expr &x);  // (type)x
// ptr + idx with idx's summands added one by one (`ptr + a + b`, not `ptr + (a + b)`): each
// term reaches the pointer on its own, in 64 bits.
Expr offset(const Expr &ptr, const Expr &idx);
Expr addr(const Expr &x);   // &x
Expr deref(const Expr &x);  // *x
Expr neg(const Expr &x);    // -x

// Writes indented lines. A scope is an indentation level with its own declared names; a
// name declared twice in one scope is a generator bug, reported by errors(). Lines longer
// than the width are wrapped at their outermost commas (or before their outermost
// ' : ', ' || ', ' && ', ' | ', ' + ', else after ' = '), continued 4 columns in (a chain of
// conditionals one alternative a line); a trailing comment that does not fit moves to its
// own line above the code.
class Emitter {
 public:
  explicit Emitter(int indent = 0, int width = 120);

  void line(const std::string &code, const std::string &comment = "");  // a statement, as written
  void comment(const std::string &text);  // "// text", wrapped at the width
  void blank();
  void raw(const std::string &text);  // verbatim lines, no indentation or wrapping
  // `type name = init;` or `type name;`, declaring name in this scope (a type ending in '*'
  // is printed against the name: `int *o`). Names may be a list: "r0, r1".
  void decl(const std::string &type, const std::string &name, const Expr &init, const std::string &comment = "");
  void decl_only(const std::string &type, const std::string &name, const std::string &comment = "");
  void assign(const Expr &lhs, const Expr &rhs, const std::string &comment = "");  // lhs = rhs;
  // `if (cond) stmt` on one line, or as a block when that does not fit; nothing when cond
  // is known false, the statement alone when known true.
  void guarded(const Expr &cond, const std::string &stmt, const std::string &comment = "");

  // `head {` ... `}`: one indentation level and one scope of names.
  void open(const std::string &head = "", const std::string &comment = "");
  void close(const std::string &tail = "");
  void close_open(const std::string &head);  // "} else {" (head "else"): the next scope
  struct Scope {
    Emitter *e;
    std::string tail;
    ~Scope() { if (e) e->close(tail); }
    Scope(Emitter *em, std::string t) : e(em), tail(std::move(t)) {}
    Scope(Scope &&o) noexcept : e(o.e), tail(std::move(o.tail)) { o.e = nullptr; }
    Scope(const Scope &) = delete;
  };
  [[nodiscard]] Scope scope(const std::string &head = "", const std::string &comment = "", std::string tail = "");

  // A loop of a trip count known now. n == 1: a plain block in which `var` is 0 (so it folds
  // away); else `#pragma unroll` and a for loop over var in 0..n-1. Calls body with var's Expr.
  template <class F>
  void unrolled(const std::string &var, long long n, const std::string &comment, F &&body) {
    if (n == 1) {
      auto s = scope("", comment);
      body(Expr(0));
      return;
    }
    line("#pragma unroll");
    auto s = scope("for (int " + var + " = 0; " + var + " < " + std::to_string(n) + "; ++" + var + ")", comment);
    declare(var);
    body(Expr::var(var, 0, n - 1));
  }

  void declare(const std::string &name);
  std::string fresh(const std::string &prefix);  // prefix0, prefix1, ... never declared before
  int depth() const { return int(scopes_.size()) - 1; }
  const std::vector<std::string> &errors() const { return errors_; }
  const std::string &str() const { return out_; }

 private:
  void put(const std::string &indent, const std::string &text);
  void wrap(const std::string &indent, const std::string &cont, const std::string &code);
  std::string indent() const { return std::string(size_t(2 * (base_ + depth())), ' '); }
  std::string out_;
  int base_ = 0, width_ = 120;
  std::vector<std::set<std::string>> scopes_;
  std::set<std::string> fresh_used_;
  std::vector<std::string> errors_;
};

}  // namespace magicube::cg
