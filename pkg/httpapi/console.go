package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/flashsale-dev/flashsale/pkg/console"
)

// consolePath is where the live sale console (pkg/console) is served. It
// needs no authentication: the page holds no data, only the script that
// asks the operator for an admin token and calls the admin API with it. No
// IP limit either: serving it costs no store call.
const consolePath = console.Path

var serveConsole = echo.WrapHandler(console.Handler())
