// layout_test.go -- the mirrors of flashstock.go agree with the C
// compiler's structs, and every FLASH_E* code of api/flashstock.h maps to
// an *Error whose name is its macro's and whose code round-trips.
package flashstock

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestLayoutOfEveryMirrorEqualsTheCCompilers(t *testing.T) {
	probe := envPath(t, "FLASHSTOCK_LAYOUT_PROBE", "")
	out, err := exec.Command(probe).Output()
	if err != nil {
		t.Fatalf("%s: %v", probe, err)
	}
	type field struct{ off, size uintptr }
	sizes := map[string]uintptr{}
	fields := map[string]map[string]field{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "struct":
			n, _ := strconv.ParseUint(f[2], 10, 64)
			sizes[f[1]] = uintptr(n)
			fields[f[1]] = map[string]field{}
		case len(f) == 4 && f[0] == "field":
			sf := strings.SplitN(f[1], ".", 2)
			o, _ := strconv.ParseUint(f[2], 10, 64)
			s, _ := strconv.ParseUint(f[3], 10, 64)
			fields[sf[0]][sf[1]] = field{uintptr(o), uintptr(s)}
		default:
			t.Fatalf("probe line %q", sc.Text())
		}
	}
	mirrors := map[string]reflect.Type{
		"flash_seg_opts":   reflect.TypeOf(SegOpts{}),
		"flash_activity":   reflect.TypeOf(Activity{}),
		"flash_order_req":  reflect.TypeOf(OrderReq{}),
		"flash_order_res":  reflect.TypeOf(OrderRes{}),
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
	if len(sizes) != len(mirrors) {
		t.Errorf("the probe prints %d structs, the binding mirrors %d", len(sizes), len(mirrors))
	}
	checked := 0
	for cname, gt := range mirrors {
		cs, ok := sizes[cname]
		if !ok {
			t.Errorf("struct %s: not in the probe's output", cname)
			continue
		}
		if gt.Size() != cs {
			t.Errorf("struct %s: C size %d, Go %s size %d", cname, cs, gt.Name(), gt.Size())
		}
		seen := 0
		var end uintptr
		for i := 0; i < gt.NumField(); i++ {
			gf := gt.Field(i)
			tag := gf.Tag.Get("c")
			if tag == "-" { // implicit C padding: after every C field
				if gf.Offset < end {
					t.Errorf("%s: padding field at %d overlaps a field ending at %d", cname, gf.Offset, end)
				}
				continue
			}
			cf, ok := fields[cname][tag]
			if !ok {
				t.Errorf("%s.%s: Go field %s has no C field (tag %q)", cname, tag, gf.Name, tag)
				continue
			}
			if gf.Offset != cf.off || gf.Type.Size() != cf.size {
				t.Errorf("%s.%s: C offset %d size %d, Go %s offset %d size %d",
					cname, tag, cf.off, cf.size, gf.Name, gf.Offset, gf.Type.Size())
			}
			if e := gf.Offset + gf.Type.Size(); e > end {
				end = e
			}
			seen++
			checked++
		}
		if seen != len(fields[cname]) {
			t.Errorf("%s: C has %d fields, the Go mirror %d", cname, len(fields[cname]), seen)
		}
	}
	t.Logf("%d structs, %d fields: sizes and offsets equal", len(mirrors), checked)
}

func TestEveryResultCodeOfTheHeaderMapsToAnErrorNamedAsItsMacro(t *testing.T) {
	hdr := envPath(t, "FLASHSTOCK_HEADER", "../../api/flashstock.h")
	src, err := os.ReadFile(hdr)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#define\s+(FLASH_E[A-Z0-9_]+)\s+\(?(-[0-9]+)\)?`)
	m := re.FindAllStringSubmatch(string(src), -1)
	if len(m) < 30 {
		t.Fatalf("only %d FLASH_E* codes found in %s", len(m), hdr)
	}
	for _, d := range m {
		code, _ := strconv.Atoi(d[2])
		err := CodeError(code)
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%s (%d): CodeError gives %T, not *Error", d[1], code, err)
			continue
		}
		if fe.Name != d[1] || fe.Code != code {
			t.Errorf("%s (%d): error named %q with code %d", d[1], code, fe.Name, fe.Code)
		}
		if RCName(code) != d[1] {
			t.Errorf("%s: flash_rcname says %q", d[1], RCName(code))
		}
		if !errors.Is(err, &Error{Code: code}) || errors.Is(err, &Error{Code: code - 1000}) {
			t.Errorf("%s: errors.Is does not compare by code", d[1])
		}
		if fe.Msg == "" || fe.Msg == "unknown result code" {
			t.Errorf("%s: no description (%q)", d[1], fe.Msg)
		}
	}
	t.Logf("%d codes of %s map to their named errors", len(m), hdr)

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
