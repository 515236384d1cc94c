// The BPE model over token ids: validated loading, Hugging Face's merge order, byte fallback.
#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer_internal.hpp"
#include "wingspan/errors.hpp"

namespace wingspan::train::tok {

using nlohmann::json;

std::int32_t checked_id(const json& value, const std::string& what, const std::string& origin) {
    if (!value.is_number_integer())
        throw InputError(origin + ": the id of " + what + " is " + value.dump().substr(0, 40) + ", not an integer");
    const std::int64_t id = value.get<std::int64_t>();
    if (id < 0 || id > kMaxTokenId || (value.is_number_unsigned() && value.get<std::uint64_t>() > std::uint64_t(kMaxTokenId)))
        throw InputError(origin + ": the id of " + what + " is " + value.dump().substr(0, 40) +
                         ", outside 0.." + std::to_string(kMaxTokenId) + " (a damaged tokenizer file?)");
    return static_cast<std::int32_t>(id);
}

std::string utf8_of(unsigned cp) {
    std::string s;
    if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    return s;
}

std::size_t utf8_len(unsigned char c) {
    if (c < 0x80) return 1;
    if ((c >> 5) == 0x6) return 2;
    if ((c >> 4) == 0xE) return 3;
    if ((c >> 3) == 0x1E) return 4;
    return 1;
}

ByteMap::ByteMap() {
    std::vector<int> bs;
    for (int b = '!'; b <= '~'; ++b) bs.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) bs.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) bs.push_back(b);
    std::vector<int> cs = bs;
    int n = 0;
    for (int b = 0; b < 256; ++b) {
        if (std::find(bs.begin(), bs.end(), b) == bs.end()) {
            bs.push_back(b);
            cs.push_back(256 + n++);
        }
    }
    for (size_t i = 0; i < bs.size(); ++i) {
        to_str[bs[i]] = utf8_of(static_cast<unsigned>(cs[i]));
        to_byte[to_str[bs[i]]] = static_cast<unsigned char>(bs[i]);
    }
}

const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}

void BpeModel::load(const json& model, const std::string& origin) {
    const json& v = model.at("vocab");
    if (!v.is_object()) throw InputError(origin + ": the BPE vocabulary is not an object");
    // Ids are checked before the id -> token table is sized by the largest: a vocabulary is dense
    // (ids 0..n-1, a few holes at most), so one id of 16,777,215 among a handful of tokens is a
    // damaged file, refused here instead of after allocating half a gigabyte of empty names.
    std::int64_t largest = -1;
    for (auto it = v.begin(); it != v.end(); ++it)
        largest = std::max<std::int64_t>(largest, checked_id(it.value(), "token \"" + it.key().substr(0, 40) + "\"", origin));
    const std::int64_t entries = static_cast<std::int64_t>(v.size());
    if (largest >= 2 * entries + 1024)
        throw InputError(origin + ": the BPE vocabulary has " + std::to_string(entries) + " tokens but ids up to " +
                         std::to_string(largest) + " (a vocabulary's ids run 0..n-1; a damaged tokenizer file?)");
    for (auto it = v.begin(); it != v.end(); ++it) {
        const std::int32_t id = checked_id(it.value(), "token \"" + it.key().substr(0, 40) + "\"", origin);
        vocab[it.key()] = id;
        if (static_cast<size_t>(id) >= id_to_token.size()) id_to_token.resize(static_cast<size_t>(id) + 1);
        id_to_token[static_cast<size_t>(id)] = it.key();
    }
    byte_fallback = model.value("byte_fallback", false);
    ignore_merges = model.value("ignore_merges", false);
    fuse_unk = model.value("fuse_unk", false);
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
        auto u = vocab.find(model["unk_token"].get<std::string>());
        if (u == vocab.end())
            throw InputError(origin + ": the unknown token \"" + model["unk_token"].get<std::string>() +
                             "\" is not in the vocabulary");
        unk_id = u->second;
    }
    byte_tokens_.fill(-1);
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        if (auto it = vocab.find(name); it != vocab.end()) byte_tokens_[static_cast<size_t>(b)] = it->second;
    }
    std::int32_t rank = 0;
    for (const auto& m : model.at("merges")) {
        std::string a, b;
        if (m.is_string()) {
            const std::string s = m.get<std::string>();
            const auto sp = s.find(' ');   // "a b": exactly two pieces, as Hugging Face reads them
            if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) throw InputError(origin + ": malformed merge entry " + m.dump());
            a = s.substr(0, sp);
            b = s.substr(sp + 1);
        } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
            a = m[0].get<std::string>();
            b = m[1].get<std::string>();
        } else {
            throw InputError(origin + ": malformed merge entry " + m.dump().substr(0, 80));
        }
        auto ia = vocab.find(a), ib = vocab.find(b), iab = vocab.find(a + b);
        if (ia == vocab.end() || ib == vocab.end() || iab == vocab.end())
            throw InputError(origin + ": the merge \"" + a + " " + b + "\" (number " + std::to_string(rank + 1) +
                             ") uses a token that is not in the vocabulary");
        merges_.emplace(pair_key(ia->second, ib->second), Merge{rank, iab->second});
        ++rank;
    }
}

const BpeModel::Merge* BpeModel::find_merge(std::int32_t a, std::int32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
}

// Hugging Face tokenizers' Word::merge_all: a queue of (rank, position); entries whose pair
// changed since they were queued are skipped.
void BpeModel::merge_all(std::vector<std::int32_t>& ids) const {
    const int n = static_cast<int>(ids.size());
    if (n < 2) return;
    struct Sym {
        std::int32_t id;
        int prev, next;
        bool gone;
    };
    std::vector<Sym> s(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) s[static_cast<size_t>(i)] = {ids[static_cast<size_t>(i)], i - 1, i + 1 < n ? i + 1 : -1, false};
    struct Item {
        std::int32_t rank;
        int pos;
        std::int32_t new_id;
        bool operator>(const Item& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> q;
    for (int i = 0; i + 1 < n; ++i)
        if (const Merge* m = find_merge(ids[static_cast<size_t>(i)], ids[static_cast<size_t>(i + 1)])) q.push({m->rank, i, m->new_id});
    while (!q.empty()) {
        const Item top = q.top();
        q.pop();
        Sym& cur = s[static_cast<size_t>(top.pos)];
        if (cur.gone || cur.next < 0) continue;
        Sym& right = s[static_cast<size_t>(cur.next)];
        const Merge* m = find_merge(cur.id, right.id);
        if (!m || m->new_id != top.new_id) continue;
        cur.id = top.new_id;
        right.gone = true;
        cur.next = right.next;
        if (cur.next >= 0) s[static_cast<size_t>(cur.next)].prev = top.pos;
        if (cur.prev >= 0)
            if (const Merge* p = find_merge(s[static_cast<size_t>(cur.prev)].id, cur.id)) q.push({p->rank, cur.prev, p->new_id});
        if (cur.next >= 0)
            if (const Merge* p = find_merge(cur.id, s[static_cast<size_t>(cur.next)].id)) q.push({p->rank, top.pos, p->new_id});
    }
    ids.clear();
    for (const auto& x : s)
        if (!x.gone) ids.push_back(x.id);
}

void BpeModel::encode(std::string_view word, std::vector<std::int32_t>& out) const {
    if (word.empty()) return;
    if (ignore_merges) {
        if (auto w = vocab.find(std::string(word)); w != vocab.end()) {
            out.push_back(w->second);
            return;
        }
    }
    std::vector<std::int32_t> ids;
    ids.reserve(word.size());
    bool last_unk = false;
    std::string ch;
    for (size_t i = 0; i < word.size();) {
        const size_t len = std::min(utf8_len(static_cast<unsigned char>(word[i])), word.size() - i);
        ch.assign(word.substr(i, len));
        i += len;
        if (auto it = vocab.find(ch); it != vocab.end()) {
            ids.push_back(it->second);
            last_unk = false;
            continue;
        }
        if (byte_fallback) {
            bool all = true;
            for (unsigned char c : ch) all = all && byte_tokens_[c] >= 0;
            if (all) {
                for (unsigned char c : ch) ids.push_back(byte_tokens_[c]);
                last_unk = false;
                continue;
            }
        }
        if (unk_id) {
            if (!(fuse_unk && last_unk)) ids.push_back(*unk_id);
            last_unk = true;
        }
    }
    merge_all(ids);
    out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace wingspan::train::tok
