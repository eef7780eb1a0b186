; Inno Setup 6 script for Lumen on Windows (x64).
;
; Not built on the Linux build machine: it needs Windows.  Build the bundle there
; first (packaging/README.md, "Building the Windows installer"), then from the
; repository root:
;
;   "C:\Program Files (x86)\Inno Setup 6\ISCC.exe" /DAppVersion=0.1.0 packaging\lumen.iss
;
; It packs dist\lumen\ (lumen.exe for the command line, lumenw.exe for the window,
; the _internal folder, SHA256SUMS) into dist\lumen-VERSION-windows-x64-setup.exe.
; The installer copies the folder to Program Files, adds Start-menu shortcuts, and
; runs `lumen --selftest` once against a throwaway profile.  Uninstalling removes
; the program folder only: each user's data (%LOCALAPPDATA%\Lumen) stays, because
; it holds the encrypted database.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif
#define DistDir "..\dist\lumen"

[Setup]
; A fixed id, so later versions upgrade this installation in place.
AppId={{4C1D8E52-7B0A-4F1E-9A55-3E2B6C0D9F17}
AppName=Lumen
AppVersion={#AppVersion}
AppVerName=Lumen {#AppVersion}
AppPublisher=Lumen
AppComments=Private medical text assistant; runs entirely on this computer, offline.
DefaultDirName={autopf}\Lumen
DefaultGroupName=Lumen
DisableProgramGroupPage=yes
; llama.cpp is compiled for x64 CPUs with AVX2: no 32-bit or Arm64 Windows.
ArchitecturesAllowed=x64os
ArchitecturesInstallIn64BitMode=x64os
PrivilegesRequired=admin
PrivilegesRequiredOverridesAllowed=dialog
OutputDir=..\dist
OutputBaseFilename=lumen-{#AppVersion}-windows-x64-setup
Compression=lzma2/max
SolidCompression=yes
WizardStyle=modern
UninstallDisplayIcon={app}\lumenw.exe
UninstallDisplayName=Lumen {#AppVersion}
; Offline by design: nothing in this installer reaches the network.

[Files]
Source: "{#DistDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[InstallDelete]
; An upgrade replaces the bundled libraries completely (no stale files from the last version).
Type: filesandordirs; Name: "{app}\_internal"

[Tasks]
Name: "desktopicon"; Description: "Create a desktop shortcut"; Flags: unchecked

[Icons]
Name: "{group}\Lumen"; Filename: "{app}\lumenw.exe"; Comment: "Open Lumen"
Name: "{group}\Lumen self-test"; Filename: "{cmd}"; Parameters: "/k ""{app}\lumen.exe"" --selftest"; WorkingDir: "{app}"; Comment: "Check this installation (models, embedder, database, window)"
Name: "{autodesktop}\Lumen"; Filename: "{app}\lumenw.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\lumenw.exe"; Description: "Open Lumen now"; Flags: postinstall nowait skipifsilent unchecked

[Code]
{ After the files are in place, run the self-test against a throwaway profile in the
  installer's temporary folder, so no user's data folder is created by the install. }
procedure CurStepChanged(CurStep: TSetupStep);
var
  ResultCode: Integer;
  Profile: String;
begin
  if CurStep = ssPostInstall then
  begin
    WizardForm.StatusLabel.Caption := 'Checking the installation (lumen --selftest)...';
    Profile := ExpandConstant('{tmp}\selftest-profile');
    if not Exec(ExpandConstant('{app}\lumen.exe'), '--profile "' + Profile + '" --selftest',
                ExpandConstant('{app}'), SW_HIDE, ewWaitUntilTerminated, ResultCode) then
      ResultCode := -1;
    Log('lumen --selftest exit code: ' + IntToStr(ResultCode));
    if ResultCode <> 0 then
      SuppressibleMsgBox('Lumen was installed, but its self-test did not pass (exit code '
        + IntToStr(ResultCode) + ').' + #13#10#13#10
        + 'Open a command prompt and run:' + #13#10
        + '"' + ExpandConstant('{app}\lumen.exe') + '" --selftest' + #13#10
        + 'to see which check failed (see the install guide).',
        mbError, MB_OK, IDOK);
  end;
end;
