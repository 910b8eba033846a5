#include "panel_sizes.hpp"

#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace shardscope::app::gui {
namespace {

void* ReadOpen(ImGuiContext*, ImGuiSettingsHandler* handler, const char* name) {
  return std::strcmp(name, "Panels") == 0 ? handler->UserData : nullptr;
}

void ReadLine(ImGuiContext*, ImGuiSettingsHandler*, void* entry, const char* line) {
  auto* sizes = static_cast<PanelSizes*>(entry);
  float v = 0;
  char name[32] = {};
  // Fractions outside (0, 1) come from a hand-edited file: ignored, the default stays.
  auto fraction = [&](const char* key, float& out) {
    char format[40];
    std::snprintf(format, sizeof format, "%s=%%f", key);
    if (std::sscanf(line, format, &v) == 1 && v > 0.02f && v < 0.98f) out = v;
  };
  fraction("Left", sizes->left);
  fraction("LeftTop", sizes->left_top);
  fraction("RightTop", sizes->right_top);
  fraction("RightMid", sizes->right_mid);
  // A name that is no view (a hand-edited or newer file) leaves every panel shown.
  if (std::sscanf(line, "Maximized=%31s", name) == 1) sizes->maximized = ParseGuiView(name);
}

void WriteAll(ImGuiContext*, ImGuiSettingsHandler* handler, ImGuiTextBuffer* out) {
  const auto* sizes = static_cast<const PanelSizes*>(handler->UserData);
  out->appendf("[%s][Panels]\n", handler->TypeName);
  out->appendf("Left=%.4f\nLeftTop=%.4f\nRightTop=%.4f\nRightMid=%.4f\n", sizes->left, sizes->left_top,
               sizes->right_top, sizes->right_mid);
  if (sizes->maximized) out->appendf("Maximized=%s\n", GuiViewText(*sizes->maximized).c_str());
  out->append("\n");
}

}  // namespace

void RegisterPanelSizesSettings(PanelSizes* sizes) {
  ImGuiSettingsHandler handler;
  handler.TypeName = "Shardscope";
  handler.TypeHash = ImHashStr("Shardscope");
  handler.ReadOpenFn = ReadOpen;
  handler.ReadLineFn = ReadLine;
  handler.WriteAllFn = WriteAll;
  handler.UserData = sizes;
  ImGui::GetCurrentContext()->SettingsHandlers.push_back(handler);
}

}  // namespace shardscope::app::gui
