// example/main.go -- a minimal flash-sale HTTP endpoint on flashstock, with
// only Go's standard library (net/http, encoding/json):
//
//	POST /order  {"user":N,"qty":1,"request_id":R}   200 {"order_no":N}
//	                                                  409 {"error":"FLASH_ESOLD_OUT"} (any refusal)
//	GET  /stock?activity=A&sku=S                      200 {"total":T,"available":A,"sold":S}
//
// usage: fsgo-example --name SEG [--listen 127.0.0.1:PORT] [--activity A] [--sku S]
//
// --listen 127.0.0.1:0 picks a free port; the address is printed on stdout
// ("listening 127.0.0.1:PORT") once the server accepts.  SIGTERM or SIGINT
// stop it.  One flashstock.Handle serves every request goroutine: the
// binding keeps each native handle on its own OS thread.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"flashstock/go/flashstock"
)

type server struct {
	h             *flashstock.Handle
	activity, sku uint32
}

type orderBody struct {
	User      uint64 `json:"user"`
	Qty       uint32 `json:"qty"`
	RequestID uint64 `json:"request_id"`
	Token     uint64 `json:"token"`
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// README begin
// POST /order: one order, its outcome as HTTP status and JSON.
func (s *server) order(w http.ResponseWriter, r *http.Request) {
	var b orderBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Qty == 0 {
		reply(w, http.StatusBadRequest, map[string]string{"error": "bad request body"})
		return
	}
	res, err := s.h.Order(r.Context(), flashstock.OrderReq{ActivityID: s.activity, SkuID: s.sku,
		UserID: b.User, Qty: b.Qty, Token: b.Token, RequestID: b.RequestID})
	if errors.Is(err, flashstock.ErrDuplicate) { // a retry: the first outcome
		err = flashstock.CodeError(int(res.FirstRC))
	}
	var fe *flashstock.Error
	switch {
	case err == nil:
		reply(w, http.StatusOK, map[string]uint64{"order_no": res.OrderNo})
	case errors.Is(err, flashstock.ErrInval):
		reply(w, http.StatusBadRequest, map[string]string{"error": "FLASH_EINVAL"})
	case errors.As(err, &fe): // sold out, limit, not started, ended, bad token, ...
		reply(w, http.StatusConflict, map[string]string{"error": fe.Name})
	default:
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	}
}

// README end

// GET /stock?activity=A&sku=S
func (s *server) stock(w http.ResponseWriter, r *http.Request) {
	a, err1 := strconv.ParseUint(r.URL.Query().Get("activity"), 10, 32)
	k, err2 := strconv.ParseUint(r.URL.Query().Get("sku"), 10, 32)
	if err1 != nil || err2 != nil {
		reply(w, http.StatusBadRequest, map[string]string{"error": "activity and sku are numbers"})
		return
	}
	info, err := s.h.SkuGet(uint32(a), uint32(k))
	var fe *flashstock.Error
	switch {
	case err == nil:
		reply(w, http.StatusOK, map[string]uint64{"total": info.Total, "available": info.Available,
			"sold": info.Total - info.Available})
	case errors.As(err, &fe) && errors.Is(err, flashstock.ErrNotFound):
		reply(w, http.StatusNotFound, map[string]string{"error": fe.Name})
	default:
		reply(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
	}
}

func main() {
	name := flag.String("name", "", "segment name (required)")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: pick one)")
	activity := flag.Uint("activity", 1, "activity of POST /order")
	sku := flag.Uint("sku", 1, "sku of POST /order")
	workers := flag.Int("workers", 0, "native handles (OS threads) at most; 0: GOMAXPROCS")
	flag.Parse()
	if *name == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: fsgo-example --name SEG [--listen ADDR:PORT] [--activity A] [--sku S]")
		os.Exit(2)
	}
	h, err := flashstock.Open(*name, flashstock.Options{Workers: *workers})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fsgo-example: open %s: %v\n", *name, err)
		os.Exit(1)
	}
	s := &server{h: h, activity: uint32(*activity), sku: uint32(*sku)}
	mux := http.NewServeMux()
	mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			reply(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
			return
		}
		s.order(w, r)
	})
	mux.HandleFunc("/stock", s.stock)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fsgo-example: listen %s: %v\n", *listen, err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", ln.Addr())
	srv := &http.Server{Handler: mux}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "fsgo-example: %v\n", err)
		os.Exit(1)
	}
	if err := h.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "fsgo-example: close: %v\n", err)
		os.Exit(1)
	}
}
