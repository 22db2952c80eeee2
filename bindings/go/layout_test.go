// layout_test.go -- the mirrors of flashstock.go agree with the C
// compiler's structs as the bindings' manifest records them
// (flashstock.manifest, generated from api/flashstock.h at build time:
// bindings/manifest/manifest.py), and every FLASH_E* code of the header
// maps to an *Error whose name is its macro's and whose code round-trips.
package flashstock

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// manifest is flashstock.manifest, read: the C compiler's view of the header.
type manifest struct {
	consts  map[string]int64           // "const" and "enum" lines
	codes   []string                   // the FLASH_E* constants, in the header's order
	sizes   map[string]uintptr         // struct name -> sizeof
	nfields map[string]int             // struct name -> its number of fields
	fields  map[string][]manifestField // struct name -> its fields, in order
}

type manifestField struct {
	name      string
	off, size uintptr
}

// readManifest parses the manifest at path; a line it cannot read is an error.
func readManifest(path string) (*manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := &manifest{consts: map[string]int64{}, sizes: map[string]uintptr{},
		nfields: map[string]int{}, fields: map[string][]manifestField{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		w := strings.Fields(sc.Text())
		bad := fmt.Errorf("%s:%d: cannot read %q", path, n, sc.Text())
		switch {
		case len(w) == 3 && (w[0] == "const" || w[0] == "enum"):
			v, err := strconv.ParseInt(w[2], 10, 64)
			if err != nil {
				return nil, bad
			}
			m.consts[w[1]] = v
			if w[0] == "const" && strings.HasPrefix(w[1], "FLASH_E") && v < 0 {
				m.codes = append(m.codes, w[1])
			}
		case len(w) == 4 && w[0] == "struct":
			size, err1 := strconv.ParseUint(w[2], 10, 64)
			nf, err2 := strconv.Atoi(w[3])
			if err1 != nil || err2 != nil {
				return nil, bad
			}
			m.sizes[w[1]] = uintptr(size)
			m.nfields[w[1]] = nf
		case len(w) == 4 && w[0] == "field":
			sf := strings.SplitN(w[1], ".", 2)
			off, err1 := strconv.ParseUint(w[2], 10, 64)
			size, err2 := strconv.ParseUint(w[3], 10, 64)
			if len(sf) != 2 || err1 != nil || err2 != nil {
				return nil, bad
			}
			m.fields[sf[0]] = append(m.fields[sf[0]], manifestField{sf[1], uintptr(off), uintptr(size)})
		default:
			return nil, bad
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for s, nf := range m.nfields {
		if len(m.fields[s]) != nf {
			return nil, fmt.Errorf("%s: struct %s: %d fields listed, %d announced", path, s, len(m.fields[s]), nf)
		}
	}
	return m, nil
}

func loadManifest(t *testing.T) *manifest {
	t.Helper()
	m, err := readManifest(envPath(t, "FLASHSTOCK_MANIFEST", ""))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// the structs the binding mirrors, by their C names
var mirrors = map[string]reflect.Type{
	"flash_seg_opts":   reflect.TypeOf(SegOpts{}),
	"flash_activity":   reflect.TypeOf(Activity{}),
	"flash_order_req":  reflect.TypeOf(OrderReq{}),
	"flash_order_res":  reflect.TypeOf(OrderRes{}),
	"flash_cart_line":  reflect.TypeOf(CartLine{}),
	"flash_cart_req":   reflect.TypeOf(cartReq{}),
	"flash_cart_res":   reflect.TypeOf(CartRes{}),
	"flash_sku_info":   reflect.TypeOf(SkuInfo{}),
	"flash_order_info": reflect.TypeOf(OrderInfo{}),
	"flash_stats":      reflect.TypeOf(Stats{}),
	"flash_ident":      reflect.TypeOf(Ident{}),
	"flash_quiet":      reflect.TypeOf(Quiet{}),
	"flash_hist":       reflect.TypeOf(Hist{}),
	"flash_obs":        reflect.TypeOf(Obs{}),
	"flash_record":     reflect.TypeOf(Record{}),
	"flash_feed_rec":   reflect.TypeOf(FeedRec{}),
	"flash_feed_info":  reflect.TypeOf(FeedInfo{}),
}

// layoutDiffs: one line per way the Go mirrors differ from the manifest's
// structs (a field of either side missing on the other, an offset or a
// size), each naming the struct and the field.
func layoutDiffs(m *manifest) (diffs []string, checked int) {
	for cname, gt := range mirrors {
		cs, ok := m.sizes[cname]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("struct %s: not in the manifest (Go mirror %s)", cname, gt.Name()))
			continue
		}
		if gt.Size() != cs {
			diffs = append(diffs, fmt.Sprintf("struct %s: C size %d, Go %s size %d", cname, cs, gt.Name(), gt.Size()))
		}
		cfields := map[string]manifestField{}
		for _, f := range m.fields[cname] {
			cfields[f.name] = f
		}
		seen := map[string]bool{}
		var end uintptr
		for i := 0; i < gt.NumField(); i++ {
			gf := gt.Field(i)
			tag := gf.Tag.Get("c")
			if tag == "-" { // implicit C padding: after every C field
				if gf.Offset < end {
					diffs = append(diffs, fmt.Sprintf("%s: padding field at %d overlaps a field ending at %d", cname, gf.Offset, end))
				}
				continue
			}
			cf, ok := cfields[tag]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: Go field %s.%s has no C field of that name", cname, tag, gt.Name(), gf.Name))
				continue
			}
			if gf.Offset != cf.off || gf.Type.Size() != cf.size {
				diffs = append(diffs, fmt.Sprintf("%s.%s: C offset %d size %d, Go %s.%s offset %d size %d",
					cname, tag, cf.off, cf.size, gt.Name(), gf.Name, gf.Offset, gf.Type.Size()))
			}
			if e := gf.Offset + gf.Type.Size(); e > end {
				end = e
			}
			seen[tag] = true
			checked++
		}
		for _, f := range m.fields[cname] {
			if !seen[f.name] {
				diffs = append(diffs, fmt.Sprintf("%s.%s: C field (offset %d size %d) not in the Go mirror %s",
					cname, f.name, f.off, f.size, gt.Name()))
			}
		}
	}
	return diffs, checked
}

func TestLayoutOfEveryMirrorEqualsTheManifests(t *testing.T) {
	m := loadManifest(t)
	diffs, checked := layoutDiffs(m)
	for _, d := range diffs {
		t.Error(d)
	}
	if len(diffs) == 0 {
		t.Logf("%d structs, %d fields: sizes and offsets equal the manifest's", len(mirrors), checked)
	}
}

// The check above finds a layout the header changed: a manifest with one
// field moved, one field added and one struct grown gives a line for each.
func TestLayoutCheckNamesTheFieldOfAManifestThatDiffers(t *testing.T) {
	m := loadManifest(t)
	f := m.fields["flash_stats"]
	f[1].off += 8
	m.fields["flash_order_req"] = append(m.fields["flash_order_req"], manifestField{"planted", 40, 8})
	m.sizes["flash_quiet"] += 8
	diffs, _ := layoutDiffs(m)
	want := []string{"flash_stats." + f[1].name + ": C offset", "flash_order_req.planted: C field",
		"struct flash_quiet: C size"}
	if len(diffs) != len(want) {
		t.Errorf("%d differences, want %d: %q", len(diffs), len(want), diffs)
	}
	for _, w := range want {
		found := false
		for _, d := range diffs {
			found = found || strings.HasPrefix(d, w)
		}
		if !found {
			t.Errorf("no difference %q in %q", w, diffs)
		}
	}
}

func TestEveryResultCodeOfTheHeaderMapsToAnErrorNamedAsItsMacro(t *testing.T) {
	man := loadManifest(t)
	if len(man.codes) < 30 {
		t.Fatalf("only %d FLASH_E* codes in the manifest", len(man.codes))
	}
	for _, name := range man.codes {
		code := int(man.consts[name])
		err := CodeError(code)
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%s (%d): CodeError gives %T, not *Error", name, code, err)
			continue
		}
		if fe.Name != name || fe.Code != code {
			t.Errorf("%s (%d): error named %q with code %d", name, code, fe.Name, fe.Code)
		}
		if RCName(code) != name {
			t.Errorf("%s: flash_rcname says %q", name, RCName(code))
		}
		if !errors.Is(err, &Error{Code: code}) || errors.Is(err, &Error{Code: code - 1000}) {
			t.Errorf("%s: errors.Is does not compare by code", name)
		}
		if fe.Msg == "" || fe.Msg == "unknown result code" {
			t.Errorf("%s: no description (%q)", name, fe.Msg)
		}
	}
	t.Logf("%d codes of the manifest map to their named errors", len(man.codes))

	// a code nobody defined keeps its code, with the library's unknown name
	var fe *Error
	if err := CodeError(-9999); !errors.As(err, &fe) || fe.Code != -9999 || fe.Name != "FLASH_E?" {
		t.Errorf("CodeError(-9999) = %#v", err)
	}
	if CodeError(0) != nil {
		t.Error("CodeError(0) is not nil")
	}
}

func TestSentinelsCarryTheirOwnCodes(t *testing.T) {
	cases := []struct {
		err  *Error
		name string
	}{
		{ErrSoldOut, "FLASH_ESOLD_OUT"}, {ErrLimit, "FLASH_ELIMIT"},
		{ErrNotStarted, "FLASH_ENOT_STARTED"}, {ErrEnded, "FLASH_EENDED"},
		{ErrNotFound, "FLASH_ENOT_FOUND"}, {ErrBadToken, "FLASH_EBAD_TOKEN"},
		{ErrDuplicate, "FLASH_EDUPLICATE"}, {ErrFull, "FLASH_EFULL"},
		{ErrInval, "FLASH_EINVAL"}, {ErrBusy, "FLASH_EBUSY"},
		{ErrLocked, "FLASH_ELOCKED"}, {ErrNotOwner, "FLASH_ENOT_OWNER"},
		{ErrCancelled, "FLASH_ECANCELLED"}, {ErrWrongThread, "FLASH_EWRONG_THREAD"},
		{ErrFork, "FLASH_EFORK"}, {ErrFateUnknown, "FLASH_EFATE_UNKNOWN"},
		{ErrReqExpired, "FLASH_EREQ_EXPIRED"},
		{ErrNoSeg, "FLASH_ENOSEG"}, {ErrReadOnly, "FLASH_EREADONLY"},
		{ErrDurability, "FLASH_EDURABILITY"}, {ErrExist, "FLASH_EEXIST"},
		{ErrTimeout, "FLASH_ETIMEOUT"}, {ErrLost, "FLASH_ELOST"},
		{ErrAhead, "FLASH_EAHEAD"}, {ErrFeedIdent, "FLASH_EFEED_IDENT"},
		{ErrRefill, "FLASH_EREFILL"},
		{ErrArchived, "FLASH_EARCHIVED"}, {ErrNotEnded, "FLASH_ENOT_ENDED"},
		{ErrDestroyed, "FLASH_EDESTROYED"},
		{ErrExpired, "FLASH_EEXPIRED"}, {ErrNotDue, "FLASH_ENOT_DUE"},
		{ErrConfirmed, "FLASH_ECONFIRMED"}, {ErrStale, "FLASH_ESTALE"},
	}
	for _, c := range cases {
		if c.err.Name != c.name || RCName(c.err.Code) != c.name {
			t.Errorf("sentinel %s has name %q, code %d", c.name, c.err.Name, c.err.Code)
		}
		if CodeError(c.err.Code) != error(c.err) {
			t.Errorf("%s: CodeError does not return the shared sentinel", c.name)
		}
	}
	if errors.Is(ErrSoldOut, ErrLimit) {
		t.Error("ErrSoldOut matches ErrLimit")
	}
}

// The record types Record.Type takes are enum flash_rec_type, member for
// member: a type the header gains and the binding lacks is named.
func TestRecordTypesAreTheHeadersEnumerators(t *testing.T) {
	man := loadManifest(t)
	binding := map[string]uint16{
		"FLASH_REC_ORDER": RecOrder, "FLASH_REC_CANCEL": RecCancel, "FLASH_REC_RESTOCK": RecRestock,
		"FLASH_REC_ACTIVITY": RecActivity, "FLASH_REC_SKU": RecSku, "FLASH_REC_GEN": RecGen,
		"FLASH_REC_ARCHIVE": RecArchive, "FLASH_REC_CONFIRM": RecConfirm, "FLASH_REC_EXPIRE": RecExpire,
		"FLASH_REC_PRICE": RecPrice,
		// not types: the flags of a cart's line (Record.Cart, Record.Last read them)
		"FLASH_REC_F_CART": RecFCart, "FLASH_REC_F_LAST": RecFLast,
	}
	n := 0
	for name, v := range man.consts {
		if !strings.HasPrefix(name, "FLASH_REC_") {
			continue
		}
		n++
		if got, ok := binding[name]; !ok {
			t.Errorf("%s (%d): no Rec constant for it", name, v)
		} else if int64(got) != v {
			t.Errorf("%s is %d, its Rec constant %d", name, v, got)
		}
	}
	if n != len(binding) {
		t.Errorf("the header has %d FLASH_REC_* enumerators, the binding %d Rec constants", n, len(binding))
	}
}
