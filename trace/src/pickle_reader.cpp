// A data-only reader of Python pickles (protocols 2 to 5): the one the Flight Recorder importer uses
// for the default dump format. A dump is untrusted input, so only the opcodes that build plain data
// are executed (dict, list, tuple, str, bytes, int, float, bool, None, memo); every opcode that
// could import a name, call something or build an object is refused before it does anything.
// The machine builds a PickleDoc (pickle_doc.hpp): 16-byte values, strings left in the input.
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "pickle_doc.hpp"
#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace detail {

namespace {

// Value budget: every opcode creates at most one value (16 bytes, plus an arena slot once it is put
// into a container), so 4 Mi values bound the parse at a few tens of MiB whatever the input says.
// A real dump of 2000 entries with stack frames holds a few hundred thousand. Memo fetches and DUP
// copy values without creating any, so the arena slots are budgeted apart (twice as many).
constexpr int64_t kMaxNodes = int64_t{1} << 22;
constexpr int64_t kMaxSlots = int64_t{1} << 23;
// The JSON built from the values: memo references let a small pickle describe a huge tree
// (a list holding the same list twice, 40 times nested), so the expansion is budgeted too, in
// values and in string bytes.
constexpr int64_t kMaxJsonValues = int64_t{1} << 23;
constexpr int64_t kMaxJsonStringBytes = int64_t{1} << 28;

const char* OpcodeName(uint8_t op) {
  switch (op) {
    case 'c':
      return "GLOBAL";
    case 0x93:
      return "STACK_GLOBAL";
    case 'R':
      return "REDUCE";
    case 'b':
      return "BUILD";
    case 'i':
      return "INST";
    case 'o':
      return "OBJ";
    case 0x81:
      return "NEWOBJ";
    case 0x92:
      return "NEWOBJ_EX";
    case 0x82:
      return "EXT1";
    case 0x83:
      return "EXT2";
    case 0x84:
      return "EXT4";
    case 'P':
      return "PERSID";
    case 'Q':
      return "BINPERSID";
    case 0x97:
      return "NEXT_BUFFER";
    case 0x98:
      return "READONLY_BUFFER";
    case 0x8f:
      return "EMPTY_SET";
    case 0x90:
      return "ADDITEMS";
    case 0x91:
      return "FROZENSET";
    case 'I':
      return "INT";
    case 'L':
      return "LONG";
    case 'F':
      return "FLOAT";
    case 'S':
      return "STRING";
    case 'V':
      return "UNICODE";
    case 'p':
      return "PUT";
    case 'g':
      return "GET";
    case 'l':
      return "LIST";
    case 'd':
      return "DICT";
    default:
      return nullptr;
  }
}

}  // namespace

class PickleMachine {
 public:
  PickleMachine(PickleDoc& doc)
      : doc_(doc), data_(doc.data_), stack_(doc.stack_), marks_(doc.marks_), memo_(doc.memo_) {
    stack_.clear();
    marks_.clear();
    memo_.clear();
  }

  void Run() {
    for (;;) {
      if (pos_ >= data_.size()) Fail("ends without a STOP opcode (truncated file?)");
      const size_t at = pos_;
      const uint8_t op = Byte();
      if (op == '.') break;
      Step(op, at);
    }
    if (stack_.size() != 1 || marks_.size() != 0)
      Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected exactly one)");
    doc_.root_ = stack_.back();
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw InvalidInput(doc_.where_ + ": pickle " + what);
  }
  [[noreturn]] void FailAt(size_t at, const std::string& what) const {
    throw InvalidInput(doc_.where_ + ": pickle byte " + std::to_string(at) + ": " + what);
  }

  [[gnu::always_inline]] uint8_t Byte() {
    if (pos_ >= data_.size()) Fail("is truncated");
    return static_cast<uint8_t>(data_[pos_++]);
  }

  // Little-endian unsigned of `n` bytes (n <= 8).
  [[gnu::always_inline]] uint64_t Unsigned(size_t n) {
    if (data_.size() - pos_ < n) Fail("is truncated inside an opcode argument");
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<uint8_t>(data_[pos_ + k])} << (8 * k);
    pos_ += n;
    return v;
  }

  [[gnu::always_inline]] void Count(size_t at) {
    if (static_cast<int64_t>(++doc_.values_) > kMaxNodes)
      FailAt(at, "holds more than " + std::to_string(kMaxNodes) + " values");
  }

  [[gnu::always_inline]] PValue Scalar(PKind kind, size_t at) {
    Count(at);
    PValue v;
    v.kind = kind;
    return v;
  }

  [[gnu::always_inline]] PValue NewContainer(PKind kind, size_t at) {
    Count(at);
    PValue v;
    v.kind = kind;
    v.u = doc_.containers_.size();
    doc_.containers_.emplace_back();
    return v;
  }

  // Moves stack_[base, end) into container `c` as one run.
  [[gnu::always_inline]] void Fill(const PValue& c, size_t base, size_t at) {
    const size_t n = stack_.size() - base;
    if (n == 0) return;
    if (static_cast<int64_t>(doc_.items_.size() + n) > kMaxSlots)
      FailAt(at, "holds more than " + std::to_string(kMaxSlots) + " container items");
    const auto start = static_cast<uint32_t>(doc_.items_.size());
    doc_.items_.insert(doc_.items_.end(), stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    const auto run = static_cast<uint32_t>(doc_.runs_.size());
    doc_.runs_.push_back({start, static_cast<uint32_t>(n), PickleDoc::kNoRun});
    PickleDoc::Container& box = doc_.containers_[static_cast<size_t>(c.u)];
    if (box.tail == PickleDoc::kNoRun)
      box.head = run;
    else
      doc_.runs_[box.tail].next = run;
    box.tail = run;
    box.count += static_cast<uint32_t>(n);
  }

  [[gnu::always_inline]] void Push(const PValue& v) { stack_.push_back(v); }

  size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }

  PValue Pop(size_t at) {
    if (stack_.size() <= Floor()) FailAt(at, "pops from an empty stack");
    PValue v = stack_.back();
    stack_.pop_back();
    return v;
  }

  const PValue& Top(size_t at) {
    if (stack_.size() <= Floor()) FailAt(at, "needs a value on the stack");
    return stack_.back();
  }

  // The stack index of the topmost mark, removing the mark (the values above it stay).
  size_t TakeMark(size_t at) {
    if (marks_.empty()) FailAt(at, "needs a MARK that is not there");
    size_t base = marks_.back();
    marks_.pop_back();
    return base;
  }

  // The container below the values of a batch (at stack index base - 1), checked to be a `kind`.
  PValue Target(size_t base, PKind kind, size_t at, const char* opname) {
    if (base <= Floor()) FailAt(at, "needs a value on the stack");
    const PValue& v = stack_[base - 1];
    if (v.kind != kind)
      FailAt(at, std::string(opname) + " applied to a value that is not a " +
                     (kind == PKind::kList ? "list" : "dict"));
    return v;
  }

  [[gnu::always_inline]] void Memo(uint64_t key, size_t at) {
    if (key > static_cast<uint64_t>(kMaxNodes))
      FailAt(at, "memo index " + std::to_string(key) + " is too large");
    size_t k = static_cast<size_t>(key);
    if (memo_.size() <= k) {
      PValue absent;
      absent.kind = PKind::kMark;
      memo_.resize(k + 1, absent);
    }
    memo_[k] = Top(at);
  }

  [[gnu::always_inline]] void Get(uint64_t key, size_t at) {
    if (key >= memo_.size() || memo_[static_cast<size_t>(key)].kind == PKind::kMark)
      FailAt(at, "memo index " + std::to_string(key) + " was never stored");
    Push(memo_[static_cast<size_t>(key)]);
  }

  [[gnu::always_inline]] void Int(int64_t i, size_t at) {
    PValue v = Scalar(PKind::kInt, at);
    v.i = i;
    Push(v);
  }

  // `len` raw bytes as a view; the length is checked against what is left, so a huge declared
  // length cannot make the reader allocate.
  [[gnu::always_inline]] void Str(uint64_t len, PKind kind, size_t at) {
    if (len > data_.size() - pos_) {
      FailAt(at, "declares a length of " + std::to_string(len) + " bytes but only " +
                     std::to_string(data_.size() - pos_) + " remain");
    }
    PValue v = Scalar(kind, at);
    v.u = pos_;
    v.len = static_cast<uint32_t>(len);  // < kMaxPickleBytes
    pos_ += static_cast<size_t>(len);
    Push(v);
  }

  // A tuple of stack_[base, end), which replaces them.
  void Tuple(size_t base, size_t at) {
    PValue t = NewContainer(PKind::kTuple, at);
    Fill(t, base, at);
    Push(t);
  }

  // One opcode, by family: each Step* returns false for an opcode not of its family.
  [[gnu::always_inline]] void Step(uint8_t op, size_t at) {
    bool done = false;
    switch (op) {  // the family by opcode first: memo and string opcodes are most of a pickle
      case 0x94:
      case 'q':
      case 'r':
      case 'h':
      case 'j':
        done = StepMemo(op, at);
        break;
      case 'X':
      case 0x8c:
      case 0x8d:
      case 'T':
      case 'B':
      case 'U':
      case 'C':
      case 0x8e:
      case 0x96:
        done = StepString(op, at);
        break;
      case 'N':
      case 0x88:
      case 0x89:
      case 'J':
      case 'K':
      case 'M':
      case 0x8a:
      case 0x8b:
      case 'G':
        done = StepScalar(op, at);
        break;
      case ']':
      case '}':
      case ')':
      case 0x85:
      case 0x86:
      case 0x87:
      case 't':
      case 'a':
      case 'e':
      case 's':
      case 'u':
        done = StepContainer(op, at);
        break;
      default:
        done = StepFraming(op, at);
        break;
    }
    if (!done) Refuse(op, at);
  }

  // Protocol, frames, marks and the stack itself.
  bool StepFraming(uint8_t op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t proto = Byte();
        if (proto < 2 || proto > 5)
          FailAt(at, "protocol " + std::to_string(proto) + " is not supported (2 to 5 are)");
        return true;
      }
      case 0x95:  // FRAME: a length hint only
        Unsigned(8);
        return true;
      case '(':  // MARK
        marks_.push_back(stack_.size());
        return true;
      case '0':  // POP
        if (!marks_.empty() && marks_.back() == stack_.size()) {
          marks_.pop_back();  // POP of a mark removes the mark, as in CPython
        } else {
          Pop(at);
        }
        return true;
      case '1':  // POP_MARK
        stack_.resize(TakeMark(at));
        return true;
      case '2':  // DUP
        Push(Top(at));
        return true;
      default:
        return false;
    }
  }

  // None, booleans, integers and floats.
  [[gnu::always_inline]] bool StepScalar(uint8_t op, size_t at) {
    switch (op) {
      case 'N':
        Push(Scalar(PKind::kNone, at));
        return true;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        PValue v = Scalar(PKind::kBool, at);
        v.u = op == 0x88 ? 1 : 0;
        Push(v);
        return true;
      }
      case 'J':  // BININT: signed 32-bit
        Int(static_cast<int32_t>(static_cast<uint32_t>(Unsigned(4))), at);
        return true;
      case 'K':  // BININT1
        Int(static_cast<int64_t>(Unsigned(1)), at);
        return true;
      case 'M':  // BININT2
        Int(static_cast<int64_t>(Unsigned(2)), at);
        return true;
      case 0x8a:    // LONG1
      case 0x8b: {  // LONG4: little-endian two's complement of n bytes
        uint64_t n = op == 0x8a ? Unsigned(1) : Unsigned(4);
        if (n > 8) FailAt(at, "integer of " + std::to_string(n) + " bytes does not fit 64 bits");
        if (data_.size() - pos_ < n) Fail("is truncated inside an integer");
        uint64_t v = Unsigned(static_cast<size_t>(n));
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign-extend
        Int(static_cast<int64_t>(v), at);
        return true;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        uint64_t le = Unsigned(8);
        uint64_t be = 0;
        for (int k = 0; k < 8; ++k) be |= ((le >> (8 * k)) & 0xff) << (8 * (7 - k));
        PValue v = Scalar(PKind::kFloat, at);
        v.f = std::bit_cast<double>(be);
        Push(v);
        return true;
      }
      default:
        return false;
    }
  }

  // Strings and bytes: each opcode's length prefix width and what the value is.
  [[gnu::always_inline]] bool StepString(uint8_t op, size_t at) {
    struct Form {
      uint8_t op;
      size_t width;
      PKind kind;
    };
    static constexpr Form kForms[] = {
        {'X', 4, PKind::kStr},     // BINUNICODE
        {0x8c, 1, PKind::kStr},    // SHORT_BINUNICODE
        {0x8d, 8, PKind::kStr},    // BINUNICODE8
        {'T', 4, PKind::kBytes},   // BINSTRING (a Python 2 str)
        {'B', 4, PKind::kBytes},   // BINBYTES
        {'U', 1, PKind::kBytes},   // SHORT_BINSTRING
        {'C', 1, PKind::kBytes},   // SHORT_BINBYTES
        {0x8e, 8, PKind::kBytes},  // BINBYTES8
        {0x96, 8, PKind::kBytes},  // BYTEARRAY8
    };
    switch (op) {
      case 0x8c:  // SHORT_BINUNICODE, by far the most common: its own case
        Str(Unsigned(1), PKind::kStr, at);
        return true;
      default:
        for (const Form& f : kForms) {
          if (f.op != op) continue;
          Str(Unsigned(f.width), f.kind, at);
          return true;
        }
        return false;
    }
  }

  // Lists, dicts and tuples, and filling them.
  [[gnu::always_inline]] bool StepContainer(uint8_t op, size_t at) {
    switch (op) {
      case ']':  // EMPTY_LIST
        Push(NewContainer(PKind::kList, at));
        return true;
      case '}':  // EMPTY_DICT
        Push(NewContainer(PKind::kDict, at));
        return true;
      case ')':  // EMPTY_TUPLE
        Tuple(stack_.size(), at);
        return true;
      case 0x85:    // TUPLE1
      case 0x86:    // TUPLE2
      case 0x87: {  // TUPLE3
        size_t n = static_cast<size_t>(op - 0x84);
        if (stack_.size() < Floor() + n) FailAt(at, "pops from an empty stack");
        Tuple(stack_.size() - n, at);
        return true;
      }
      case 't':  // TUPLE
        Tuple(TakeMark(at), at);
        return true;
      case 'a': {  // APPEND
        if (stack_.size() <= Floor()) FailAt(at, "pops from an empty stack");
        const size_t base = stack_.size() - 1;
        Fill(Target(base, PKind::kList, at, "APPEND"), base, at);
        return true;
      }
      case 'e': {  // APPENDS
        const size_t base = TakeMark(at);
        Fill(Target(base, PKind::kList, at, "APPENDS"), base, at);
        return true;
      }
      case 's': {  // SETITEM
        if (stack_.size() < Floor() + 2) FailAt(at, "pops from an empty stack");
        const size_t base = stack_.size() - 2;
        Fill(Target(base, PKind::kDict, at, "SETITEM"), base, at);
        return true;
      }
      case 'u': {  // SETITEMS
        const size_t base = TakeMark(at);
        if ((stack_.size() - base) % 2 != 0) FailAt(at, "SETITEMS with an odd number of values");
        Fill(Target(base, PKind::kDict, at, "SETITEMS"), base, at);
        return true;
      }
      default:
        return false;
    }
  }

  // The memo: storing and fetching values by index.
  [[gnu::always_inline]] bool StepMemo(uint8_t op, size_t at) {
    switch (op) {
      case 'q':  // BINPUT
      case 'r':  // LONG_BINPUT
        Memo(Unsigned(op == 'q' ? 1 : 4), at);
        return true;
      case 0x94:  // MEMOIZE
        Memo(memo_next_++, at);
        return true;
      case 'h':  // BINGET
      case 'j':  // LONG_BINGET
        Get(Unsigned(op == 'h' ? 1 : 4), at);
        return true;
      default:
        return false;
    }
  }

  [[noreturn]] void Refuse(uint8_t op, size_t at) {
    const char* name = OpcodeName(op);
    if (name == nullptr) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", op);
      FailAt(at, std::string("unknown opcode ") + hex);
    }
    std::string why = (op == 'I' || op == 'L' || op == 'F' || op == 'S' || op == 'V' || op == 'p' ||
                       op == 'g' || op == 'l' || op == 'd')
                          ? "is a protocol 0 text opcode; only binary pickles (protocol 2 to 5) are read"
                      : (op == 0x8f || op == 0x90 || op == 0x91)
                          ? "builds a set, which no Flight Recorder dump contains"
                          : "could import or call code, so this data-only reader refuses it (a dump is "
                            "untrusted input and is never executed)";
    FailAt(at, std::string("opcode ") + name + " " + why);
  }

  PickleDoc& doc_;
  std::string_view data_;
  size_t pos_ = 0;
  std::vector<PValue>& stack_;
  std::vector<size_t>& marks_;  // stack sizes at each MARK
  std::vector<PValue>& memo_;   // kind kMark: never stored
  uint64_t memo_next_ = 0;
};

PickleDoc::PickleDoc(std::string_view data, std::string where) { Parse(data, std::move(where)); }

void PickleDoc::Parse(std::string_view data, std::string where) {
  data_ = data;
  where_ = std::move(where);
  root_ = PValue{};
  items_.clear();
  containers_.clear();
  runs_.clear();
  values_ = 0;
  if (static_cast<int64_t>(data.size()) > kMaxPickleBytes) {
    throw InvalidInput(where_ + ": pickle of " + std::to_string(data.size()) +
                       " bytes is larger than the limit " + std::to_string(kMaxPickleBytes >> 20) + " MiB");
  }
  PickleMachine(*this).Run();
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs are the common case: 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ULL) != 0) break;
      i += 8;
    }
    if (i >= s.size()) break;
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<uint8_t>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3f);
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (!ok) return false;
    i += len;
  }
  return true;
}

// Pickle strings are UTF-8 by definition, but a hostile file may hold anything; invalid
// sequences become U+FFFD so that every later JSON dump of the value succeeds.
std::string ValidUtf8(std::string_view s) {
  if (IsValidUtf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<uint8_t>(s[i + k]) >> 6) == 0x2;
    if (ok && len > 1) {
      uint32_t cp = c & (0x7f >> len);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<uint8_t>(s[i + k]) & 0x3f);
      const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min[len] && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
    }
  }
  return out;
}

namespace {

// The JSON form of a parsed pickle (ReadPickle), with the expansion budgeted.
class JsonBuilder {
 public:
  explicit JsonBuilder(const PickleDoc& doc) : doc_(doc) {}

  void Build(const PValue& v, json& out, int depth) {
    if (depth > kMaxPickleDepth)
      Fail("is nested deeper than " + std::to_string(kMaxPickleDepth) + " levels (or holds a cycle)");
    Budget(v.kind == PKind::kStr || v.kind == PKind::kBytes ? v.len : 0);
    switch (v.kind) {
      case PKind::kNone:
      case PKind::kMark:
        out = nullptr;
        return;
      case PKind::kBool:
        out = v.u != 0;
        return;
      case PKind::kInt:
        out = v.i;
        return;
      case PKind::kFloat:
        out = v.f;
        return;
      case PKind::kStr:
      case PKind::kBytes:
        out = ValidUtf8(doc_.Text(v));
        return;
      case PKind::kList:
      case PKind::kTuple:
        out = json::array();
        doc_.ForEach(v, [&](const PValue& item) {
          json x;
          Build(item, x, depth + 1);
          out.push_back(std::move(x));
        });
        return;
      case PKind::kDict:
        out = json::object();
        doc_.ForEachPair(v, [&](const PValue& key, const PValue& value) {
          std::string name;
          if (key.kind == PKind::kStr || key.kind == PKind::kBytes)
            name = ValidUtf8(doc_.Text(key));
          else if (key.kind == PKind::kInt)
            name = std::to_string(key.i);
          else if (key.kind == PKind::kBool)
            name = key.u != 0 ? "True" : "False";
          else
            Fail("has a dict key that is not a str, bytes, int or bool");
          json x;
          Build(value, x, depth + 1);
          out[name] = std::move(x);  // a repeated key keeps the last value, as Python does
        });
        return;
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw InvalidInput(doc_.where() + ": pickle " + what);
  }
  void Budget(size_t extra_bytes) {
    if (++values_ > kMaxJsonValues)
      Fail("expands to more than " + std::to_string(kMaxJsonValues) + " values");
    bytes_ += static_cast<int64_t>(extra_bytes);
    if (bytes_ > kMaxJsonStringBytes)
      Fail("expands to more than " + std::to_string(kMaxJsonStringBytes >> 20) + " MiB of strings");
  }

  const PickleDoc& doc_;
  int64_t values_ = 0, bytes_ = 0;
};

}  // namespace
}  // namespace detail

json ReadPickle(std::string_view data, const std::string& where) {
  detail::PickleDoc doc(data, where);
  json out;
  detail::JsonBuilder(doc).Build(doc.root(), out, 0);
  return out;
}

}  // namespace shardscope::trace
