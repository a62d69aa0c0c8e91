#!/usr/bin/env python3
"""bench/muc_heapwalk.py PID [TOP [ALL]]: a census of glibc's heaps in a running (best: stopped) process.

Walks the chunks of every non-main arena heap (64 MiB-aligned anonymous mappings) and the
main [heap], and reports how full each resident 4 KiB page is with chunks in use, and, for
pages holding less than 1 KiB in use, which chunks keep them: size and first word (for a Swift
object its metadata; `gdb -batch -p PID -ex 'info symbol ADDR'` names the static ones). This
is what `malloc_trim` cannot give back: a page with one live chunk on it stays resident
(bench/README.md, MUC memory, sixth round). Reads /proc/PID/pagemap before /proc/PID/mem,
because reading a page through mem maps it.

With ALL, also writes every chunk in use on a resident page, by size and first word, to the file
ALL (bench/muc_heapwalk.sh diffs the read logged in against the read in the room with it).

tcache chunks count as in use (glibc marks them so). Run as root (pagemap, ptrace rights).
"""
import collections, os, re, struct, sys

pid = int(sys.argv[1])
maps = [l.split() for l in open(f'/proc/{pid}/maps')]
mem = open(f'/proc/{pid}/mem', 'rb', 0)
pagemap = open(f'/proc/{pid}/pagemap', 'rb', 0)
HEAP_MAX = 64 << 20
MALLOC_STATE_SIZE = 0x898  # glibc 2.36, x86-64


def resident(addr, npages):
    pagemap.seek((addr // 4096) * 8)
    data = pagemap.read(8 * npages)
    return [(struct.unpack_from('<Q', data, 8 * i)[0] >> 63) & 1 for i in range(npages)]


page_used = collections.Counter()
chunks_on_page = collections.defaultdict(list)
resident_pages = set()
region_of_page = {}
kinds_by_heap = collections.defaultdict(collections.Counter)  # every chunk in use, by heap
STRINGS = os.environ.get('PER_HEAP')
strings = collections.Counter()  # what the Swift strings in use say, digits as '#'
total_resident = 0
for fields in maps:
    lo, hi = (int(x, 16) for x in fields[0].split('-'))
    name = fields[5] if len(fields) > 5 else ''
    if not fields[1].startswith('rw') or name not in ('', '[heap]'):
        continue
    if name == '':
        if lo % HEAP_MAX:
            continue
        mem.seek(lo)
        ar_ptr = struct.unpack('<Q', mem.read(8))[0]
        start = (ar_ptr + MALLOC_STATE_SIZE + 15) & ~15 if lo <= ar_ptr < hi else lo + 0x20
    else:
        start = lo
    res = resident(lo, (hi - lo) // 4096)
    total_resident += sum(res) * 4096
    mem.seek(lo)
    data = mem.read(hi - lo)

    def walk(first):
        chunks, at = [], first
        while at + 16 <= hi:
            size = struct.unpack_from('<Q', data, at - lo + 8)[0] & ~7
            if size < 32 or at + size > hi:
                break
            chunks.append((at, size))
            at += size
        return chunks

    chunks = max((walk(c) for c in (start, start - 16, start + 16, lo + 16, lo)), key=len)
    for i, (at, size) in enumerate(chunks[:-1]):  # the last one is the top chunk
        following = at + size
        if not struct.unpack_from('<Q', data, following - lo + 8)[0] & 1:
            continue
        first_word = struct.unpack_from('<Q', data, at - lo + 16)[0]
        kinds_by_heap[f'{lo:#x}'][(size, first_word)] += 1
        if STRINGS and size <= 256:
            # A native Swift string: 32 bytes of header (the last its count), then UTF-8 and a NUL.
            body = at - lo + 16
            count = struct.unpack_from('<Q', data, body + 24)[0] & 0xFFFFFFFFFFFF
            if 0 < count <= size - 48:
                text = data[body + 32:body + 32 + count]
                if data[body + 32 + count] == 0 and all(32 <= c < 127 for c in text):
                    strings[re.sub(rb'[0-9]+', b'#', text).decode()] += 1
        for page in range(at // 4096, (at + size - 1) // 4096 + 1):
            page_used[page] += min(at + size, (page + 1) * 4096) - max(at, page * 4096)
            chunks_on_page[page].append((size, first_word))
            if res[page - lo // 4096]:
                resident_pages.add(page)
                region_of_page[page] = f'{lo:#x}'

used = sum(page_used.values())
print(f'resident heap pages {total_resident / 1e6:.1f} MB; chunks in use {used / 1e6:.1f} MB; '
      f'resident pages holding chunks in use: {len(resident_pages)}')
histogram = collections.Counter(min(page_used[p], 4095) // 512 for p in resident_pages)
print('those pages by bytes in use (0-511, 512-1023, ...):', [histogram[b] for b in range(8)])
sparse = [p for p in resident_pages if page_used[p] < 1024]
kinds = collections.Counter(kind for p in sparse for kind in chunks_on_page[p])
print(f'pages with less than 1 KiB in use: {len(sparse)}, holding {sum(kinds.values())} chunks; the commonest (count, size, first word):')
for (size, word), count in kinds.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25):
    print(f'{count:8} {size:6} {word:#x}')
if len(sys.argv) > 3:
    # Every chunk in use on a resident page, by (size, first word): for diffing two reads.
    with open(sys.argv[3], 'w') as out:
        every = collections.Counter(kind for p in resident_pages for kind in chunks_on_page[p])
        for (size, word), count in every.most_common():
            out.write(f'{count} {size} {word:#x}\n')
by_heap = collections.Counter(region_of_page[p] for p in sparse)
all_by_heap = collections.Counter(region_of_page[p] for p in resident_pages)
if os.environ.get('PER_HEAP'):
    used_by_heap = collections.Counter()
    for p in resident_pages: used_by_heap[region_of_page[p]] += page_used[p]
    for heap in all_by_heap:
        print(f'HEAP {heap} {all_by_heap[heap]} {by_heap[heap]} {used_by_heap[heap]}')
    for heap, kinds in kinds_by_heap.items():
        for (size, word), count in kinds.items():
            if count >= 20: print(f'KIND {heap} {size} {word:#x} {count}')
    for text, count in strings.items():
        if count >= 20: print(f'STRING {count} {text}')
print('by heap (arena heap start: sparse pages / resident pages with chunks in use):',
      ', '.join(f'{heap} {count}/{all_by_heap[heap]}' for heap, count in by_heap.most_common()))
