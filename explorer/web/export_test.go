package web

// ModuleOrder lets the handler's tests ask for every module the page loads.
var ModuleOrder = moduleOrder
