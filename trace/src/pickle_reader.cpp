// A data-only reader of Python pickles (protocols 2 to 5): the one the Flight Recorder importer uses
// for the default dump format. A dump is untrusted input, so only the opcodes that build plain data
// are executed (dict, list, tuple, str, bytes, int, float, bool, None, memo); every opcode that
// could import a name, call something or build an object is refused before it does anything.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "shardscope/error.hpp"
#include "shardscope/trace/flight_recorder.hpp"

namespace shardscope::trace {

using nlohmann::json;

namespace {

// Node budget: every opcode creates at most one node and each node costs about 80 bytes, so
// 4 Mi nodes bound the parse at about 320 MiB whatever the input says. A real dump of 2000 entries
// with stack frames holds a few hundred thousand.
constexpr int64_t kMaxNodes = int64_t{1} << 22;
// The JSON built from the node graph: memo references let a small pickle describe a huge tree
// (a list holding the same list twice, 40 times nested), so the expansion is budgeted too, in
// values and in string bytes.
constexpr int64_t kMaxJsonValues = int64_t{1} << 23;
constexpr int64_t kMaxJsonStringBytes = int64_t{1} << 28;

enum class Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kList, kTuple, kDict, kMark };

// Values live in one arena and refer to each other by index, so a list that holds itself (legal
// in a pickle) is a cycle of indices, not of owning pointers.
struct Node {
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::vector<size_t> items;  // list/tuple elements; dict: key, value, key, value, ...
};

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

class PickleParser {
 public:
  PickleParser(std::string_view data, std::string where) : data_(data), where_(std::move(where)) {}

  json Parse() {
    for (;;) {
      if (pos_ >= data_.size()) Fail("ends without a STOP opcode (truncated file?)");
      const size_t at = pos_;
      const uint8_t op = Byte();
      if (op == '.') break;
      Step(op, at);
    }
    if (stack_.size() != 1 || marks_.size() != 0)
      Fail("STOP with " + std::to_string(stack_.size()) + " values on the stack (expected exactly one)");
    json out;
    int64_t values = 0, bytes = 0;
    ToJson(stack_.back(), out, 0, values, bytes);
    return out;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const { throw InvalidInput(where_ + ": pickle " + what); }
  [[noreturn]] void FailAt(size_t at, const std::string& what) const {
    throw InvalidInput(where_ + ": pickle byte " + std::to_string(at) + ": " + what);
  }

  uint8_t Byte() {
    if (pos_ >= data_.size()) Fail("is truncated");
    return static_cast<uint8_t>(data_[pos_++]);
  }

  // Little-endian unsigned of `n` bytes (n <= 8).
  uint64_t Unsigned(size_t n) {
    if (data_.size() - pos_ < n) Fail("is truncated inside an opcode argument");
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<uint8_t>(data_[pos_ + k])} << (8 * k);
    pos_ += n;
    return v;
  }

  // `len` raw bytes; the length is checked against what is left before anything is copied, so a
  // huge declared length cannot make the reader allocate.
  std::string Raw(uint64_t len, size_t at) {
    if (len > data_.size() - pos_) {
      FailAt(at, "declares a length of " + std::to_string(len) + " bytes but only " +
                     std::to_string(data_.size() - pos_) + " remain");
    }
    std::string out(data_.substr(pos_, static_cast<size_t>(len)));
    pos_ += static_cast<size_t>(len);
    return out;
  }

  size_t NewNode(Kind kind, size_t at) {
    if (static_cast<int64_t>(nodes_.size()) >= kMaxNodes)
      FailAt(at, "holds more than " + std::to_string(kMaxNodes) + " values");
    nodes_.push_back(Node{});
    nodes_.back().kind = kind;
    return nodes_.size() - 1;
  }

  void Push(size_t node) { stack_.push_back(node); }

  size_t Pop(size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) FailAt(at, "pops from an empty stack");
    size_t v = stack_.back();
    stack_.pop_back();
    return v;
  }

  size_t& Top(size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) FailAt(at, "needs a value on the stack");
    return stack_.back();
  }

  // The values above the topmost mark, removing them and the mark.
  std::vector<size_t> PopMark(size_t at) {
    if (marks_.empty()) FailAt(at, "needs a MARK that is not there");
    size_t base = marks_.back();
    marks_.pop_back();
    std::vector<size_t> out(stack_.begin() + static_cast<std::ptrdiff_t>(base), stack_.end());
    stack_.resize(base);
    return out;
  }

  Node& Container(size_t index, Kind kind, size_t at, const char* opname) {
    Node& n = nodes_[index];
    if (n.kind != kind)
      FailAt(at, std::string(opname) + " applied to a value that is not a " +
                     (kind == Kind::kList ? "list" : "dict"));
    return n;
  }

  void Memo(uint64_t key, size_t at) {
    if (key > static_cast<uint64_t>(kMaxNodes))
      FailAt(at, "memo index " + std::to_string(key) + " is too large");
    size_t k = static_cast<size_t>(key);
    if (memo_.size() <= k) memo_.resize(k + 1, kNoValue);
    memo_[k] = Top(at);
  }

  void Get(uint64_t key, size_t at) {
    if (key >= memo_.size() || memo_[static_cast<size_t>(key)] == kNoValue)
      FailAt(at, "memo index " + std::to_string(key) + " was never stored");
    Push(memo_[static_cast<size_t>(key)]);
  }

  void Int(int64_t v, size_t at) {
    size_t n = NewNode(Kind::kInt, at);
    nodes_[n].i = v;
    Push(n);
  }

  void Str(std::string s, Kind kind, size_t at) {
    size_t n = NewNode(kind, at);
    nodes_[n].s = std::move(s);
    Push(n);
  }

  void Tuple(std::vector<size_t> items, size_t at) {
    size_t n = NewNode(Kind::kTuple, at);
    nodes_[n].items = std::move(items);
    Push(n);
  }

  // One opcode, by family: each Step* returns false for an opcode not of its family.
  void Step(uint8_t op, size_t at) {
    if (!StepFraming(op, at) && !StepScalar(op, at) && !StepString(op, at) && !StepContainer(op, at) &&
        !StepMemo(op, at))
      Refuse(op, at);
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
        PopMark(at);
        return true;
      case '2':  // DUP
        Push(Top(at));
        return true;
      default:
        return false;
    }
  }

  // None, booleans, integers and floats.
  bool StepScalar(uint8_t op, size_t at) {
    switch (op) {
      case 'N':
        Push(NewNode(Kind::kNone, at));
        return true;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        size_t n = NewNode(Kind::kBool, at);
        nodes_[n].b = op == 0x88;
        Push(n);
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
        size_t n = NewNode(Kind::kFloat, at);
        nodes_[n].f = std::bit_cast<double>(be);
        Push(n);
        return true;
      }
      default:
        return false;
    }
  }

  // Strings and bytes: each opcode's length prefix width and what the value is.
  bool StepString(uint8_t op, size_t at) {
    struct Form {
      uint8_t op;
      size_t width;
      Kind kind;
    };
    static constexpr Form kForms[] = {
        {'X', 4, Kind::kStr},     // BINUNICODE
        {0x8c, 1, Kind::kStr},    // SHORT_BINUNICODE
        {0x8d, 8, Kind::kStr},    // BINUNICODE8
        {'T', 4, Kind::kBytes},   // BINSTRING (a Python 2 str)
        {'B', 4, Kind::kBytes},   // BINBYTES
        {'U', 1, Kind::kBytes},   // SHORT_BINSTRING
        {'C', 1, Kind::kBytes},   // SHORT_BINBYTES
        {0x8e, 8, Kind::kBytes},  // BINBYTES8
        {0x96, 8, Kind::kBytes},  // BYTEARRAY8
    };
    for (const Form& f : kForms) {
      if (f.op != op) continue;
      Str(Raw(Unsigned(f.width), at), f.kind, at);
      return true;
    }
    return false;
  }

  // Lists, dicts and tuples, and filling them.
  bool StepContainer(uint8_t op, size_t at) {
    switch (op) {
      case ']':  // EMPTY_LIST
        Push(NewNode(Kind::kList, at));
        return true;
      case '}':  // EMPTY_DICT
        Push(NewNode(Kind::kDict, at));
        return true;
      case ')':  // EMPTY_TUPLE
        Tuple({}, at);
        return true;
      case 0x85:    // TUPLE1
      case 0x86:    // TUPLE2
      case 0x87: {  // TUPLE3
        size_t n = static_cast<size_t>(op - 0x84);
        std::vector<size_t> items(n);
        for (size_t k = n; k-- > 0;) items[k] = Pop(at);
        Tuple(std::move(items), at);
        return true;
      }
      case 't':  // TUPLE
        Tuple(PopMark(at), at);
        return true;
      case 'a': {  // APPEND
        size_t v = Pop(at);
        Container(Top(at), Kind::kList, at, "APPEND").items.push_back(v);
        return true;
      }
      case 'e': {  // APPENDS
        std::vector<size_t> items = PopMark(at);
        Node& list = Container(Top(at), Kind::kList, at, "APPENDS");
        list.items.insert(list.items.end(), items.begin(), items.end());
        return true;
      }
      case 's': {  // SETITEM
        size_t v = Pop(at), k = Pop(at);
        Node& dict = Container(Top(at), Kind::kDict, at, "SETITEM");
        dict.items.push_back(k);
        dict.items.push_back(v);
        return true;
      }
      case 'u': {  // SETITEMS
        std::vector<size_t> kv = PopMark(at);
        if (kv.size() % 2 != 0) FailAt(at, "SETITEMS with an odd number of values");
        Node& dict = Container(Top(at), Kind::kDict, at, "SETITEMS");
        dict.items.insert(dict.items.end(), kv.begin(), kv.end());
        return true;
      }
      default:
        return false;
    }
  }

  // The memo: storing and fetching values by index.
  bool StepMemo(uint8_t op, size_t at) {
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

  // Pickle strings are UTF-8 by definition, but a hostile file may hold anything; invalid
  // sequences become U+FFFD so that every later JSON dump of the value succeeds.
  static std::string ValidUtf8(const std::string& s) {
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

  void Budget(int64_t& values, int64_t& bytes, size_t extra_bytes) const {
    if (++values > kMaxJsonValues) Fail("expands to more than " + std::to_string(kMaxJsonValues) + " values");
    bytes += static_cast<int64_t>(extra_bytes);
    if (bytes > kMaxJsonStringBytes)
      Fail("expands to more than " + std::to_string(kMaxJsonStringBytes >> 20) + " MiB of strings");
  }

  void ToJson(size_t index, json& out, int depth, int64_t& values, int64_t& bytes) const {
    if (depth > kMaxPickleDepth)
      Fail("is nested deeper than " + std::to_string(kMaxPickleDepth) + " levels (or holds a cycle)");
    const Node& n = nodes_[index];
    Budget(values, bytes, n.s.size());
    switch (n.kind) {
      case Kind::kNone:
      case Kind::kMark:
        out = nullptr;
        return;
      case Kind::kBool:
        out = n.b;
        return;
      case Kind::kInt:
        out = n.i;
        return;
      case Kind::kFloat:
        out = n.f;
        return;
      case Kind::kStr:
      case Kind::kBytes:
        out = ValidUtf8(n.s);
        return;
      case Kind::kList:
      case Kind::kTuple:
        out = json::array();
        for (size_t item : n.items) {
          json v;
          ToJson(item, v, depth + 1, values, bytes);
          out.push_back(std::move(v));
        }
        return;
      case Kind::kDict:
        out = json::object();
        for (size_t k = 0; k + 1 < n.items.size(); k += 2) {
          const Node& key = nodes_[n.items[k]];
          std::string name;
          if (key.kind == Kind::kStr || key.kind == Kind::kBytes)
            name = ValidUtf8(key.s);
          else if (key.kind == Kind::kInt)
            name = std::to_string(key.i);
          else if (key.kind == Kind::kBool)
            name = key.b ? "True" : "False";
          else
            Fail("has a dict key that is not a str, bytes, int or bool");
          json v;
          ToJson(n.items[k + 1], v, depth + 1, values, bytes);
          out[name] = std::move(v);  // a repeated key keeps the last value, as Python does
        }
        return;
    }
  }

  static constexpr size_t kNoValue = std::numeric_limits<size_t>::max();

  std::string_view data_;
  std::string where_;
  size_t pos_ = 0;
  std::vector<Node> nodes_;
  std::vector<size_t> stack_;
  std::vector<size_t> marks_;  // stack sizes at each MARK
  std::vector<size_t> memo_;
  uint64_t memo_next_ = 0;
};

}  // namespace

json ReadPickle(std::string_view data, const std::string& where) {
  if (static_cast<int64_t>(data.size()) > kMaxPickleBytes) {
    throw InvalidInput(where + ": pickle of " + std::to_string(data.size()) +
                       " bytes is larger than the limit " + std::to_string(kMaxPickleBytes >> 20) + " MiB");
  }
  return PickleParser(data, where).Parse();
}

}  // namespace shardscope::trace
